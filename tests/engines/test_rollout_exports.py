"""`rollout` exports the engines by name (`from rollout import HFEngine`); they live in turngym.engines."""


def test_rollout_still_exports_the_engines():
    import rollout
    from turngym import engines

    for name in ("Engine", "EngineError", "Generation", "SamplingParams", "HFEngine", "SGLangEngine"):
        assert getattr(rollout, name) is getattr(engines, name)
