"""The entity-type colours cannot be taken for the correct / wrong colours of the feedback page, for any colour
vision, and their badges are readable: measured on static/css/site.css itself.

Colour blindness is simulated with Machado, Oliveira & Fernandes (2009) at full severity (protanopia,
deuteranopia, tritanopia) on linear RGB; distances are CIE76 Delta E in CIELAB (2.3 is a just-noticeable
difference; the old organizations mark was 2.6 from "correct" under tritanopia, 1.4 from "wrong" under
protanopia).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CSS = (Path(__file__).resolve().parents[2] / "static" / "css" / "site.css").read_text(encoding="utf-8")

VISION = {
    "normal": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
}
KINDS = ("people", "organizations", "locations")


def _var(rule: str, name: str) -> str:
    match = re.search(rf"{re.escape(rule)}\s*\{{[^}}]*?{re.escape(name)}:\s*(#[0-9a-fA-F]{{6}})", CSS)
    assert match, f"{name} not set in {rule}"
    return match.group(1)


def _linear(hex_colour: str) -> list[float]:
    out = []
    for i in (1, 3, 5):
        c = int(hex_colour[i : i + 2], 16) / 255
        out.append(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
    return out


def _lab(linear: list[float]) -> tuple[float, float, float]:
    r, g, b = linear
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t):
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def delta_e(a: str, b: str, vision: str) -> float:
    m = VISION[vision]

    def seen(colour):
        lin = _linear(colour)
        return _lab([min(1.0, max(0.0, sum(m[i][j] * lin[j] for j in range(3)))) for i in range(3)])

    return sum((p - q) ** 2 for p, q in zip(seen(a), seen(b), strict=True)) ** 0.5


def contrast(a: str, b: str) -> float:
    def lum(colour):
        r, g, b_ = _linear(colour)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b_

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


ROOT_GOLD, ROOT_GOLD_LINE = _var(":root", "--gold"), _var(":root", "--gold-line")
ROOT_BAD_BG, ROOT_BAD = _var(":root", "--bad-bg"), _var(":root", "--bad")


def test_the_simulation_sees_what_it_should():
    # Red and green collapse for a deuteranope, not for a tritanope; the old organizations mark (mint) was all
    # but "correct" for a tritanope and all but "wrong" for a protanope.
    assert delta_e("#d62728", "#2ca02c", "normal") > 60
    assert delta_e("#d62728", "#2ca02c", "deuteranopia") < 10 < 60 < delta_e("#d62728", "#2ca02c", "tritanopia")
    assert delta_e("#cdeee6", ROOT_GOLD, "tritanopia") < 3 and delta_e("#cdeee6", ROOT_BAD_BG, "protanopia") < 2


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("vision", VISION)
def test_entity_colours_are_far_from_correct_and_wrong(kind, vision):
    mark, line = _var(f".ner-{kind}", "--mark"), _var(f".ner-{kind}", "--mark-line")
    for verdict_bg in (ROOT_GOLD, ROOT_BAD_BG):
        assert delta_e(mark, verdict_bg, vision) >= 10, (kind, vision, mark, verdict_bg)
    for verdict_line in (ROOT_GOLD_LINE, ROOT_BAD):
        assert delta_e(line, verdict_line, vision) >= 20, (kind, vision, line, verdict_line)


@pytest.mark.parametrize("kind", KINDS)
def test_entity_badges_and_marks_are_readable(kind):
    badge = re.search(rf"\.kind-badge\.kind-{kind}\s*\{{\s*background:(#[0-9a-fA-F]{{6}})", CSS).group(1)
    assert badge == _var(f".ner-{kind}", "--mark-line")  # one colour per kind, badge and marks
    assert contrast(badge, "#ffffff") >= 4.5  # white badge text, WCAG AA
    assert contrast(_var(f".ner-{kind}", "--mark"), _var(":root", "--fg")) >= 7  # marked words stay readable


def test_the_feedback_says_right_or_wrong_without_colour():
    assert re.search(r"\.chip\.mine\.right::before[^{]*\{[^}]*content:\"\\2713\"", CSS)
    assert re.search(r"\.chip\.mine\.wrong::before\s*\{[^}]*content:\"\\2717\"", CSS)
