# pytorch/examples' MNIST network shape on synthetic digits: Conv2d, max_pool2d, Dropout, log_softmax + nll_loss,
# BatchNorm, Adam with StepLR, train/eval modes.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR

device = torch.device("cuda")
torch.manual_seed(1)


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(16 * 6 * 6, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(self.bn1(x))
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


templates = torch.randn(10, 1, 16, 16)
labels = torch.randint(0, 10, (256,))
images = templates[labels] + 0.3 * torch.randn(256, 1, 16, 16)

model = Net().to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-2)
scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
for epoch in range(1, 4):
    model.train()
    for batch_idx in range(0, 256, 32):
        data, target = images[batch_idx : batch_idx + 32].to(device), labels[batch_idx : batch_idx + 32].to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
    print(f"Train Epoch: {epoch}\tLoss: {loss.item():.6f}")
    scheduler.step()

model.eval()
test_loss, correct = 0.0, 0
with torch.no_grad():
    data, target = images.to(device), labels.to(device)
    output = model(data)
    test_loss = F.nll_loss(output, target, reduction="sum").item() / len(labels)
    pred = output.argmax(dim=1, keepdim=True)
    correct = pred.eq(target.view_as(pred)).sum().item()
print(f"Test set: Average loss: {test_loss:.4f}, Accuracy: {correct}/{len(labels)}")
assert correct > 200
print("running_mean[:3]:", [round(v, 5) for v in model.bn1.running_mean[:3].tolist()],
      "num_batches_tracked:", model.bn1.num_batches_tracked.item())
