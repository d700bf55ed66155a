"""sample_objects reads per-sample objects from either container TransferQueue returns."""

from tensordict import NonTensorData, NonTensorStack

from trainer.data.sample_objects import sample_objects


class _PlainList(list):
    """A list subclass without `tolist`, like TransferQueue's own list type."""


def test_a_non_tensor_stack_gives_its_objects_not_wrappers():
    stack = NonTensorStack(NonTensorData({"turns": 2}), NonTensorData({"turns": 3}))
    assert sample_objects(stack) == [{"turns": 2}, {"turns": 3}]


def test_a_plain_list_type_is_taken_as_it_is():
    assert sample_objects(_PlainList([{"turns": 1}, None])) == [{"turns": 1}, None]
