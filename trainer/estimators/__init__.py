"""Advantage estimators, one per module, registered in verl's estimator registry."""
