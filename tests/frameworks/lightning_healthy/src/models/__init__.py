from models.regressor import DemandRegressor

__all__ = ["DemandRegressor"]
