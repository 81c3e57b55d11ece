# SPDX-License-Identifier: MIT
"""Zoo: a Lightning Trainer.fit of a small MLP, one epoch."""
import torch
from torch.utils.data import DataLoader, TensorDataset

try:
    import lightning as L
except ImportError:
    import pytorch_lightning as L


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.f = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))

    def training_step(self, batch, i):
        x, y = batch
        return torch.nn.functional.mse_loss(self.f(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


torch.manual_seed(0)
data = DataLoader(TensorDataset(torch.randn(512, 32), torch.randn(512, 1)), batch_size=64)
trainer = L.Trainer(max_epochs=1, accelerator="gpu", devices=1, enable_progress_bar=False, logger=False,
                    enable_checkpointing=False, enable_model_summary=False)
trainer.fit(Net(), data)
print(f"lightning: {trainer.global_step} steps")
