# An MLP classifier trained with nn.Linear + optim.SGD on a DataLoader, saved and reloaded.
import io

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = "cuda"
torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self, in_features, hidden, classes):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.out(x)


X = torch.randn(512, 20)
w_true = torch.randn(20, 4)
y = (X @ w_true).argmax(dim=1)
loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(0))

model = MLP(20, 64, 4).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
criterion = nn.CrossEntropyLoss()

for epoch in range(6):
    model.train()
    total = 0.0
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * xb.size(0)
    scheduler.step()
    print(f"epoch {epoch}: loss {total / len(loader.dataset):.6f} lr {scheduler.get_last_lr()[0]:.4f}")

model.eval()
with torch.no_grad():
    accuracy = (model(X.to(device)).argmax(dim=1) == y.to(device)).float().mean().item()
print(f"accuracy {accuracy:.4f}")
assert accuracy > 0.8

buffer = io.BytesIO()
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
buffer.seek(0)
checkpoint = torch.load(buffer, map_location=device)
restored = MLP(20, 64, 4).to(device)
restored.load_state_dict(checkpoint["model"])
with torch.no_grad():
    assert torch.equal(restored(X[:8].to(device)), model(X[:8].to(device)))
print("checkpoint restored:", sorted(checkpoint["optimizer"]["state"])[:3], len(checkpoint["model"]))
