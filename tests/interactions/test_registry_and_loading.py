"""The interaction registry, YAML loading (with errors naming file and entry), and a YAML-registered
interaction driving a conversation env."""

import textwrap

import pytest
from gymnasium.utils.env_checker import check_env

import interactions
from interactions import InteractionConfigError, UnknownInteractionError

QUIZ_MODULE = """
from interactions import Interaction, InteractionOutcome, InteractionReply


class CapitalQuiz(Interaction):
    def __init__(self, *, country="France", capital="Paris", bonus=0.0):
        self.country, self.capital, self.bonus = country, capital, bonus

    def start(self, episode_info):
        self.right = False
        return [{"role": "user", "content": f"What is the capital of {self.country}?"}]

    def respond(self, messages):
        said = messages[-1]["content"]
        self.right = self.capital.lower() in said.lower()
        if self.right:
            return InteractionReply("Yes!", 1.0, True)
        return InteractionReply("No, try again.", 0.0, False)

    def finish(self, outcome=None):
        return InteractionOutcome(self.bonus if self.right else 0.0, {"success": self.right})

    def expert_reply(self, messages):
        return f"It is {self.capital}."
"""


@pytest.fixture
def quiz_yaml(tmp_path, monkeypatch):
    (tmp_path / "quiz_user_mod.py").write_text(QUIZ_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "interactions.yaml"
    path.write_text(
        textwrap.dedent(
            """
            interactions:
              capital-quiz-test:
                entry: quiz_user_mod:CapitalQuiz
                description: Asks for a capital.
                config: {country: Japan, capital: Tokyo, bonus: 0.5}
            """
        )
    )
    return path


def test_builtins_are_registered_and_built_lazily():
    names = {s.name for s in interactions.list_interactions()}
    assert {"answer-feedback", "scripted-user", "llm-user"} <= names
    made = interactions.make("answer-feedback", max_attempts=2)
    assert made.name == "answer-feedback" and made.max_attempts == 2


def test_unknown_name_suggests_close_ones():
    with pytest.raises(UnknownInteractionError, match="answer-feedback"):
        interactions.make("answer-feedbak")


def test_entry_point_must_build_an_interaction():
    interactions.register("not-an-interaction-test", "collections:OrderedDict")
    with pytest.raises(TypeError, match="not an interactions.Interaction"):
        interactions.make("not-an-interaction-test")


def test_yaml_interaction_drives_a_conversation_env(quiz_yaml):
    from envs.conversations.interaction_env import InteractionEnv

    found = interactions.load_interactions(quiz_yaml)
    assert list(found) == ["capital-quiz-test"] and found["capital-quiz-test"].source == str(quiz_yaml)
    env = InteractionEnv(interaction="capital-quiz-test", system_prompt="Answer the quiz.")
    check_env(env, skip_render_check=True)
    messages, _ = env.reset(seed=0)
    assert messages[-1]["content"] == "What is the capital of Japan?"
    assert env.step("Kyoto?")[1:3] == (0.0, False)
    messages, reward, terminated, _, info = env.step(env.expert_action())
    assert terminated and reward == 1.5 and info["success"] is True
    # Config given at build time overrides the YAML defaults.
    env = InteractionEnv(
        interaction="capital-quiz-test", interaction_config={"country": "Peru", "capital": "Lima"}
    )
    assert env.reset(seed=0)[0][-1]["content"] == "What is the capital of Peru?"


def test_yaml_list_layout(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text(
        "- name: strict-tutor-test\n  entry: interactions.answer_feedback:AnswerFeedback\n  config: {max_attempts: 1}\n"
    )
    interactions.load_interactions(path)
    assert interactions.make("strict-tutor-test").max_attempts == 1


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "the file is empty"),
        ("a: [unclosed", "not valid YAML"),
        ("7", "expected a mapping"),
        ("bad-entry: 5", "entry 'bad-entry': expected a mapping"),
        ("x:\n  entry: no_colon_here", "entry 'x': `entry` must be 'module:attr'"),
        ("x:\n  entry: no_such_module_xyz:Thing", "entry 'x': cannot import module"),
        ("x:\n  entry: interactions:NoSuchThing", "entry 'x': 'interactions:NoSuchThing' names nothing"),
        ("x:\n  entry: interactions:make\n  config: [1, 2]", "entry 'x': `config` must be a mapping"),
        ("x:\n  entry: interactions:make\n  confg: {}", "entry 'x': unknown keys ['confg']"),
        ("- entry: interactions:make", "entry #0: each list item needs a string `name`"),
    ],
)
def test_yaml_errors_name_file_entry_and_problem(tmp_path, text, problem):
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(InteractionConfigError) as err:
        interactions.load_interactions(path)
    assert str(path) in str(err.value) and problem in str(err.value)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(InteractionConfigError, match="cannot read the file"):
        interactions.load_interactions(tmp_path / "nope.yaml")


def test_interactions_do_not_import_envs_rollout_or_trainer():
    import subprocess
    import sys

    code = (
        "import sys, interactions; interactions.make('scripted-user'); interactions.make('answer-feedback');"
        "import interactions.llm_user;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('envs', 'rollout', 'trainer', 'torch', 'transformers')];"
        "print(bad); assert not bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
