"""luminal.training: reverse-mode autodiff as a graph pass (autograd.py, the rule of each view
in autograd_views.py), optimizers whose step is more graph (optim/, exposed as luminal.optim)
and one compiled train step (train.py). Nothing here runs: each part adds graph."""
