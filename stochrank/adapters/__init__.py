"""Per-booster glue: how LightGBM, XGBoost (and CatBoost) hand data to a Python objective."""
