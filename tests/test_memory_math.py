import math

import numpy as np
import pytest

from localrag.memory.edges import delta, enhance, penalise, readout


def rand_unit(seed, d=384):
    v = np.random.default_rng(seed).normal(size=d).astype(np.float32)
    return v / np.linalg.norm(v)


def test_delta_values():
    assert delta(0) == pytest.approx(2 / math.pi)
    assert delta(1) == pytest.approx(0, abs=1e-12)
    assert delta(2) < 0  # self-limiting above norm 1


def test_enhance_norm_sequence_from_zero():
    q = rand_unit(1)
    v = np.zeros_like(q)
    norms = []
    for _ in range(4):
        v = enhance(v, q)
        norms.append(float(np.linalg.norm(v)))
    assert norms[0] == pytest.approx(2 / math.pi, abs=1e-5)
    assert norms[1] == pytest.approx(0.981, abs=2e-3)
    assert norms[2] == pytest.approx(1.0, abs=1e-4)
    assert norms[3] == pytest.approx(1.0, abs=1e-5)


def test_enhance_normalises_the_query():
    q = rand_unit(2)
    assert np.allclose(enhance(np.zeros_like(q), 5 * q), enhance(np.zeros_like(q), q), atol=1e-6)


@pytest.mark.parametrize("s", [0.2, 0.637, 0.9, 1.0])
def test_penalty_shrinks_query_component_by_max_delta_s(s):
    q = rand_unit(3)
    other = rand_unit(4)
    other -= np.dot(other, q) * q
    other /= np.linalg.norm(other)
    v = (s * q + 0.3 * other).astype(np.float32)
    out = penalise(v, q, "intended")
    factor = max(delta(s), s)
    assert float(np.dot(out, q)) == pytest.approx(s * (1 - factor), abs=1e-5)
    assert float(np.dot(out, other)) == pytest.approx(0.3, abs=1e-5)  # the orthogonal part is untouched
    if s == 0.637:
        assert float(np.dot(out, q)) == pytest.approx(0.232, abs=2e-3)


def test_penalty_off_and_negative_projection_do_nothing():
    q = rand_unit(5)
    v = (-0.5 * q).astype(np.float32)
    assert np.allclose(penalise(v, q, "intended"), v)
    assert np.allclose(penalise(0.7 * q, q, "off"), 0.7 * q)


def test_readout_after_one_reinforcement():
    q = rand_unit(6)
    v = enhance(np.zeros_like(q), q)
    assert readout(0.4, v, q, 0.1) == pytest.approx(0.1 * 0.4 + 0.9 * 2 / math.pi, abs=1e-5)
    assert readout(0.4, None, q, 0.1) == pytest.approx(0.04)
