"""The players beside a model and how they are scored: the random and expert players
(`baseline_players`), expert evaluation (`expert_evaluation`), an env's behaviour counts as rates
(`behaviour`) and the success rate's interval (`success_interval`)."""
