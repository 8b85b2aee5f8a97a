from data.datamodule import DemandDataModule

__all__ = ["DemandDataModule"]
