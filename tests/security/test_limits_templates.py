"""Finding 5c: template arithmetic, string sizes and rendering time are bounded; the dashboard keeps
answering while a launch renders."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from unittest import mock

import httpx
import pytest
from hypothesis import given, settings, strategies as st
from limits_support import TOKEN, in_child, run_cli, serving

from kubebench.errors import TemplateError
from kubebench.render.templating import render_string

LIMIT = "KUBEBENCH_MAX_TEMPLATE_CHARS changes it"
SLOW = "KUBEBENCH_MAX_RENDER_SECONDS changes it"

CASES = [  # (template, the error's words): each asked for gigabytes or hours before
    ("{{ 9**(9**9) }}", "would have more than 16,384 bits"),
    ("{{ ('x' * 1500000000)|length }}", LIMIT),
    ("{{ lipsum(10**6)|length }}", LIMIT),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", SLOW),
    # 10^10 characters: whichever bound comes first, the size of the text or the time
    ("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}", "KUBEBENCH_MAX_"),
    ("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", LIMIT),
    ("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", LIMIT),
    ("{% set s = 'x' * 1000000 %}{% set a = [s,s,s,s,s,s,s,s,s,s] %}{% set b = [a,a,a,a,a,a,a,a,a,a] %}{{ b }}", LIMIT),
    ("{% set s = 'x' * 100000 %}{{ s|replace('x', s)|length }}", LIMIT),
    ("{% set s = 'x' * 100000 %}{{ s.replace('x', s)|length }}", LIMIT),
    ("{{ 'x'|center(1500000000)|length }}", LIMIT),
    ("{{ 'x'.ljust(1500000000)|length }}", LIMIT),
    ("{{ ('%1500000000d'|format(1))|length }}", LIMIT),
    ("{{ ('%1500000000d' % 1)|length }}", LIMIT),
    ("{{ '{:>1500000000}'.format(1)|length }}", LIMIT),
    ("{{ '{:>{w}}'.format(1, w=1500000000)|length }}", LIMIT),
    ("{{ range(100000)|join('x' * 100000)|length }}", LIMIT),
    ("{{ ('x' * 100000).join(range(100000)|map('string'))|length }}", "KUBEBENCH_MAX_"),
    ("{{ [1]|batch(1500000000, 'x')|list|length }}", LIMIT),
    ("{{ range(100000)|list|tojson(indent=100000)|length }}", LIMIT),
    ("{% set s = 'x\n' * 400000 %}{{ s|indent(1000000)|length }}", LIMIT),
    ("{{ ('x' * 900000)|wordwrap(1, wrapstring='y' * 1000)|length }}", LIMIT),
    ("{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}{% endmacro %}{{ f(40)|length }}", SLOW),
    ("{% set x %}{% for i in range(100000) %}{% for j in range(100000) %}xxxxxxxxxx{% endfor %}{% endfor %}"
     "{% endset %}{{ x|length }}", SLOW),
    ("{{ ('\t' * 900000).expandtabs(1000000)|length }}", LIMIT),
    # loops with neither a call nor an operator nor output inside: only the loop itself can check
    ("{% set x = range(3000)|list %}{% for a in x %}{% for b in x %}{% for c in x %}{% endfor %}{% endfor %}"
     "{% endfor %}", SLOW),
]


@pytest.mark.parametrize("template, words", CASES, ids=[str(i) for i in range(len(CASES))])
def test_a_template_cannot_ask_for_gigabytes_or_hours(template: str, words: str) -> None:
    answer = in_child(render_string, template, {}, "job.command[1]", timeout=30,
                      env={"KUBEBENCH_MAX_RENDER_SECONDS": "2"})
    assert answer[0] == "error", answer
    assert answer[1] == "TemplateError" and answer[2].startswith("job.command[1]: ") and words in answer[2], answer


def test_templates_of_real_specs_still_render() -> None:
    text = ("{{ ('ab' * 10)|length }} {{ 1024**3 }} {{ '%05d'|format(42) }} {{ [1, 2]|join(',') }} "
            "{{ 'a-b'.replace('-', '_') }} {{ '{:>4}'.format(7) }} {{ 'x' ~ 2 }} {{ (batch / 2)|int }} "
            "{{ range(3)|map('string')|join('-') }} {{ 'k'|center(3) }}")
    assert render_string(text, {"batch": 64}, "t") == "20 1073741824 00042 1,2 a_b    7 x2 32 0-1-2  k "


@settings(max_examples=50, deadline=None)
@given(count=st.integers(0, 3_000_000), kind=st.sampled_from(["'x'", "[1]", "'ab'"]))
def test_repetition_is_bounded_by_the_size_of_what_it_makes(count: int, kind: str) -> None:
    size = count * 2 if kind != "'x'" else count  # a list's items count, and each small number in it
    template = f"{{{{ ({kind} * {count})|length }}}}"
    if size <= 1_000_000:
        assert render_string(template, {}, "t") == str(count * (2 if kind == "'ab'" else 1))
    else:
        with pytest.raises(TemplateError, match=LIMIT):
            render_string(template, {}, "t")


@settings(max_examples=50, deadline=None)
@given(base=st.integers(2, 1000), exponent=st.integers(0, 100_000))
def test_powers_are_bounded_by_their_bits(base: int, exponent: int) -> None:
    template = "{{ (b ** e) % 1000 }}"
    if exponent * base.bit_length() <= 16_000:  # well inside the limit
        assert render_string(template, {"b": base, "e": exponent}, "t") == str(pow(base, exponent, 1000))
    elif (exponent * (base.bit_length() - 1)) > 16_384:  # surely past it
        with pytest.raises(TemplateError, match="bits"):
            render_string(template, {"b": base, "e": exponent}, "t")


def test_the_time_budget_is_shared_by_every_render_of_a_plan() -> None:
    from kubebench.render.budget import time_budget

    endless = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    with time_budget(0.2):
        with pytest.raises(TemplateError, match="rendering took longer than"):
            render_string(endless, {}, "trial 1")
        with pytest.raises(TemplateError, match="rendering took longer than"):  # nothing left for trial 2
            render_string("{{ a }}", {"a": 1}, "trial 2")
    assert render_string("{{ a }}", {"a": 1}, "outside") == "1"


@pytest.mark.slow
def test_the_cli_refuses_the_reviewed_templates_with_exit_2(tmp_path: Path) -> None:
    for i, template in enumerate(["{{ 9**(9**9) }}", '{{ ("x" * 1500000000)|length }}']):
        spec = tmp_path / f"j{i}.yaml"
        spec.write_text(f"name: j\njob:\n  command: [echo, '{template}']\n", encoding="utf-8")
        for command in (["render"], ["run", "--dry-run"]):  # a dry run refuses what the run would
            done = run_cli(*command, spec.name, cwd=tmp_path, timeout=60, memory_bytes=1_000_000_000)
            assert done.returncode == 2, (command, done.stderr[-2000:])
            assert "job.command[1] (trial no parameters): " in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_slow_launch_does_not_hold_up_other_requests(tmp_path: Path) -> None:
    from kubebench.settings import settings as make_settings
    from kubebench.store.store import open_store
    from kubebench.web.app import make_app

    home = tmp_path / "home"
    home.mkdir()
    config = make_settings(home=home, store=f"sqlite:///{home / 'kubebench.db'}", storage=str(home / "experiments"))
    spec = ("name: slow\ntelemetry: {enabled: false}\njob:\n  command: [echo, "
            "'{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}']\n")
    answers: list = []
    with mock.patch.dict(os.environ, {"KUBEBENCH_MAX_RENDER_SECONDS": "4"}), \
            serving(make_app(open_store(config.store_url), config, token=TOKEN)) as url:
        post = threading.Thread(target=lambda: answers.append(httpx.post(
            f"{url}/api/experiments", json={"spec": spec}, headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=120)))
        post.start()
        served_meanwhile = 0
        deadline = time.monotonic() + 60
        while post.is_alive() and time.monotonic() < deadline:
            started = time.monotonic()
            assert httpx.get(f"{url}/api/experiments", timeout=30).status_code == 200
            served_meanwhile += post.is_alive() and time.monotonic() - started < 2.0
        post.join(timeout=60)
    assert not post.is_alive() and answers and answers[0].status_code == 422, answers
    assert "rendering took longer than 4 s" in answers[0].text
    assert served_meanwhile >= 3  # the dashboard answered at once, again and again, while it rendered


def _render_jsonnet(folder: str, text: str) -> str:
    from kubebench.render.templating import render_template_file

    path = Path(folder) / "job.jsonnet"
    path.write_text(text, encoding="utf-8")
    return render_template_file(path, {"n": 1}, text)["kind"]


def test_a_jsonnet_template_that_runs_for_hours_is_stopped(tmp_path: Path) -> None:
    text = "local f(n) = if n == 0 then 0 else f(n-1) + f(n-1);\n{kind: 'Job', x: f(40)}\n"
    answer = in_child(_render_jsonnet, str(tmp_path), text, timeout=60, env={"KUBEBENCH_MAX_RENDER_SECONDS": "2"})
    assert answer[:2] == ("error", "TemplateError") and "rendering took longer than 2 s" in answer[2], answer


def test_a_jsonnet_template_that_takes_gigabytes_is_stopped(tmp_path: Path) -> None:
    text = "{kind: 'Job', x: std.length(std.makeArray(300000000, function(i) i))}\n"
    answer = in_child(_render_jsonnet, str(tmp_path), text, timeout=120, memory_bytes=1_000_000_000,
                      env={"KUBEBENCH_MAX_JSONNET_BYTES": "400000000"})
    assert answer[:2] == ("error", "TemplateError") and "KUBEBENCH_MAX_JSONNET_BYTES" in answer[2], answer
    assert _render_jsonnet(str(tmp_path), "{kind: 'Job', n: std.extVar('n')}") == "Job"  # the next one renders
