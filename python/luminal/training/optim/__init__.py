"""luminal.optim: optimizers whose step is part of the graph (optimizer.py) and learning-rate
schedules as graph expressions of the step count (lr_scheduler.py), with torch.optim's names."""

from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "lr_scheduler"]
