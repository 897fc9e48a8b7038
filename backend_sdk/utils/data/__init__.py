"""``backend_sdk.utils.data``: datasets, samplers and the DataLoader, as ``torch.utils.data``."""
from ._collate import default_collate, default_convert
from .dataloader import DataLoader, WorkerInfo, get_worker_info
from .distributed import DistributedSampler
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)

__all__ = [
    "DataLoader", "Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset", "random_split",
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
    "DistributedSampler",
    "default_collate", "default_convert", "get_worker_info", "WorkerInfo",
]
