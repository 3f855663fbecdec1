"""The Space's words for metrics (the registry's labels, the id kept) and what its example leaves behind."""

from __future__ import annotations

from eccv_metric.hub import space


def test_space_labels_are_the_registrys_with_the_id_kept():
    from eccv_metric.benchmarks.definitions import REGISTRY
    from eccv_metric.benchmarks.names import metric_label

    assert [metric_label(n) for n in ("coco_1k_r1", "eccv_map_at_r", "coco_5k_recalls", "cxc_t2t_medr")] == [
        "COCO 1K R@1", "ECCV Caption mAP@R", "COCO 5K R@K", "CxC text-to-text MedR"
    ]  # fmt: skip
    assert metric_label("pmrp") == "PMRP" and metric_label("pm_zeta0_r1") == "PMRP, zeta = 0: R@1"
    assert metric_label("not_a_metric") == "not_a_metric"
    choices = space.labelled(space.metric_choices())
    assert ("COCO 1K R@1 (coco_1k_r1)", "coco_1k_r1") in choices
    assert all(label.endswith(f"({name})") for label, name in choices)  # the id findable by typing it
    assert len({label for label, _ in choices}) == len(choices)
    benchmarks = space.labelled(REGISTRY.names(), "benchmark")
    assert benchmarks[0] == ("COCO 1K (coco_1k)", "coco_1k") and len(benchmarks) == len(REGISTRY.names())


def test_the_examples_settings_leave_with_the_users_own_input():
    """ "Load the small example" sets benchmarks, metrics and the partial tick for its partial lists; an upload or
    pasted text of the user's own puts them back to the defaults (unless the user changed them: theirs), and an
    upload clears the example's text."""
    reset = {"benchmarks": [], "metrics": [], "partial": False, "example_on": False}
    example = space.EXAMPLE
    assert space.after_own_input(True, example, uploaded=True) == reset | {"pasted": ""}
    assert space.after_own_input(True, example, uploaded=False) == {}  # the example's own text: nothing to undo
    assert space.after_own_input(True, '{"i2t": {"1": [2]}}', uploaded=False) == reset  # pasted text of their own
    assert space.after_own_input(True, "", uploaded=True) == reset
    assert space.after_own_input(False, example, uploaded=True) == {"pasted": ""}  # settings the user changed stay
    assert space.after_own_input(False, '{"i2t": {}}', uploaded=True) == {}  # the user's text stays: two inputs
    state = space.example_state()
    assert state["partial"] is True and state["benchmarks"] and set(space.EXAMPLE_RESET) < set(state)
