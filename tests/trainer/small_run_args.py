"""The overrides of the smallest embedded-model training run the end-to-end trainer tests start."""

SMALL_RUN = [
    "env.train_episodes=16",
    "env.val_episodes=4",
    "data.train_batch_size=4",
    "actor_rollout_ref.rollout.n=2",
    "actor_rollout_ref.actor.ppo_mini_batch_size=4",
    "data.max_response_length=128",
    "turngym.warm_start.episodes=8",
    "turngym.warm_start.epochs=1",
    "turngym.warm_start.batch_size=4",
    "trainer.logger=[console]",
]
# No validation and no checkpoints unless the test asks for them.
QUIET = ["trainer.val_before_train=false", "trainer.test_freq=-1", "trainer.save_freq=-1"]
