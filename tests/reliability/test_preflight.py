"""Failures say why, early: before the first episode each called arm is checked by its model
listing (the scripted server on 127.0.0.1 as the endpoint), and an arm that cannot run is one
line naming the sweep file, the field, the arm and the cause, exit 2, before Ray starts and with
nothing written; during a run, an arm whose episodes end in error says how many and the first
cause on its progress line and in the summary."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pandas as pd
import pytest
from sweep_runs import (
    FAKE_KEY,
    FAST_PROTOCOL,
    KEY_ENV,
    copy_mazes,
    files_under,
    gridbench,
    run_cli,
    sweep_file,
)

from testing.scripted_server import ScriptedServer

ARM = "llama"
MODEL = "openai/llama-3-8b-instruct"  # the server knows it as llama-3-8b-instruct


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound for a moment, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def arm(api_base: str, **fields) -> dict:
    return {"name": ARM, "model": MODEL, "api_base": api_base, "max_concurrency": 1, "protocol": FAST_PROTOCOL,
            **fields}


@pytest.fixture
def refused_run(tmp_path, monkeypatch, capfd):
    """Runs a sweep of the built-in oracle and one called arm; returns (exit code, stderr),
    after checking that nothing was written and no Ray started."""
    monkeypatch.chdir(tmp_path)

    def go(entry: dict) -> tuple[int, str, Path]:
        path = sweep_file(tmp_path / "bad.yaml", models=[{"name": "oracle", "model": "builtin/oracle"}, entry])
        before = files_under(tmp_path)
        code, out, err = run_cli(["run", str(path), "--out", str(tmp_path / "results")], capfd)
        assert files_under(tmp_path) == before and not (tmp_path / "results").exists()
        assert "Traceback" not in err and FAKE_KEY not in err + out
        import ray

        assert not ray.is_initialized()  # refused before Ray started
        return code, err.strip(), path

    return go


def test_an_unreachable_endpoint_is_one_line_in_seconds(refused_run):
    port = closed_port()
    t0 = time.monotonic()
    code, err, path = refused_run(arm(f"http://127.0.0.1:{port}/v1"))
    elapsed = time.monotonic() - t0
    assert code == 2
    assert err == (f"gridbench: {path}: models[1].api_base: {ARM}: cannot reach "
                   f"http://127.0.0.1:{port}/v1/models: Connection refused")
    # it took 4m37s of silent retries before the preflight; one refused connection is milliseconds
    assert elapsed < 30, elapsed


def test_a_refused_key_is_one_line_without_the_key(refused_run, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    with ScriptedServer(model="llama-3-8b-instruct", api_key="sk-the-right-one-0123456789") as srv:
        code, err, path = refused_run(arm(srv.url, api_key_env=KEY_ENV))
        assert [r.path for r in srv.requests] == ["/v1/models"]  # the listing only: nothing spent
    assert code == 2
    assert err == (f"gridbench: {path}: models[1].api_key_env: {ARM}: {srv.url}/models refused the key in "
                   f"{KEY_ENV} (HTTP 401)")


def test_a_model_the_endpoint_does_not_list_is_one_line(refused_run):
    with ScriptedServer(model="gemma-3-270m") as srv:
        code, err, path = refused_run(arm(srv.url))
        assert not srv.chat_requests
    assert code == 2
    assert err == (f"gridbench: {path}: models[1].model: {ARM}: {srv.url}/models does not list "
                   "'llama-3-8b-instruct' (it lists gemma-3-270m) (--no-preflight skips this check)")


def test_a_provider_through_litellm_is_asked_by_its_own_listing(refused_run, monkeypatch):
    """Anthropic's listing, as litellm asks it (GET /v1/models with x-api-key), at the scripted
    server: a refused key is the same one line; the right key and a dated version pass."""
    from orchestrator.preflight import check_called, summary
    from orchestrator.sweep import load_sweep

    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    claude = {"model": "anthropic/claude-sonnet-4-5", "api_key_env": KEY_ENV}
    with ScriptedServer(model="claude-sonnet-4-5-20250929", api_key="sk-ant-the-right-one-0123456789") as srv:
        base = srv.url.removesuffix("/v1")
        code, err, path = refused_run({**arm(base), **claude})
        assert [(r.path, r.headers.get("x-api-key")) for r in srv.requests] == [("/v1/models", FAKE_KEY)]
        assert code == 2
        assert err == (f"gridbench: {path}: models[1].api_key_env: {ARM}: anthropic's model listing at {base} "
                       f"refused the key in {KEY_ENV} (HTTP 401)")
        monkeypatch.setenv(KEY_ENV, "sk-ant-the-right-one-0123456789")
        lines = summary(check_called(load_sweep(path)))
        assert len(lines) == 1 and lines[0].startswith(f"preflight: {ARM}: reachable, key accepted, model listed")
        assert not srv.chat_requests


def test_a_gemini_arm_is_found_past_the_listings_first_page(refused_run, monkeypatch):
    """Google lists models a page at a time (50 by default; the persona, 5): the Gemini adapter
    asks for pages of 1000 and follows them through Google's SDK, where litellm's listing reads
    the first default page alone. A
    key Google calls invalid (its HTTP 400) is refused as a key, in the same one line."""
    from orchestrator.preflight import check_called, summary
    from orchestrator.sweep import load_sweep

    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    lite = {"model": "gemini/gemini-3.1-flash-lite", "api_key_env": KEY_ENV, "protocol": {**FAST_PROTOCOL, "effort": "low", "thinking": True}}
    with ScriptedServer(persona="gemini", api_key="AIza-the-right-one-0123456789") as srv:
        code, err, path = refused_run({**arm(srv.gemini_url), **lite})
        assert code == 2
        assert err == (f"gridbench: {path}: models[1].api_key_env: {ARM}: gemini's model listing at {srv.gemini_url} "
                       f"refused the key in {KEY_ENV} (HTTP 400)")
        monkeypatch.setenv(KEY_ENV, "AIza-the-right-one-0123456789")
        lines = summary(check_called(load_sweep(path)))
        assert len(lines) == 1 and lines[0].startswith(f"preflight: {ARM}: reachable, key accepted, model listed")
        assert [r.path for r in srv.requests][-1] == "/v1beta/models?pageSize=1000"
        assert not srv.chat_requests
        # litellm's listing asks for the default page alone, where this model is not
        from orchestrator.preflight import _litellm_listing, provider_listing

        first_page = provider_listing(_litellm_listing("gemini"), "AIza-the-right-one-0123456789", srv.gemini_url)
        assert first_page and "gemini-3.1-flash-lite" not in {i.removeprefix("gemini/") for i in first_page}


def test_the_listing_holds_a_dated_version_of_an_alias():
    from orchestrator.preflight import listed

    assert listed("claude-sonnet-4-5", ["claude-sonnet-4-5-20250929"], "anthropic")
    assert listed("claude-3-7-sonnet-latest", ["claude-3-7-sonnet-20250219"])
    assert listed("gemini-2.5-pro", ["models/gemini-2.5-pro"], "gemini")
    assert listed("gpt-4o", ["gpt-4o-2024-08-06"])
    assert not listed("claude-sonnet-4", ["claude-sonnet-4-5-20250929"])  # 4 is not 4.5
    assert not listed("llama-3-8b-instruct", ["gemma-3-270m"])


@pytest.mark.slow
def test_an_arm_whose_episodes_end_in_error_says_why_during_and_after_the_run(tmp_path):
    """The endpoint lists the model, then refuses every request with a 400: each episode ends in
    error, and the run says how many and the first cause, on the progress line and after it."""
    mazes = copy_mazes(tmp_path / "mazes", ["scale-8"])
    with ScriptedServer(["400"], model="llama-3-8b-instruct") as srv:
        path = sweep_file(tmp_path / "failing.yaml", mazes=str(mazes), repeats=2, models=[arm(srv.url)])
        done = gridbench("run", str(path), "--out", str(tmp_path / "results"), cwd=tmp_path, timeout=600)
    assert done.returncode == 1, done.stderr
    episodes = pd.read_parquet(tmp_path / "results" / "failing" / "episodes")
    assert (episodes["termination"] == "error").all() and len(episodes) == 2
    # the agent's message, less the arm's name the lines give anyway
    cause = ("BadRequestError: litellm.BadRequestError: OpenAIException - Invalid value for 'messages': "
             "unsupported content part")
    assert (episodes["error_message"] == f"{ARM}: {cause}").all()
    assert "preflight: llama: reachable, key accepted, model listed" in done.stderr
    # as it happens: the whole first cause above the bars, its class on the arm's progress line
    assert f"first error of {ARM}: {cause}" in done.stderr.splitlines()
    progress = [line for line in done.stderr.splitlines() if line.startswith(f"{ARM} ")]
    assert progress and "errors   2 (BadRequestError)" in progress[-1], done.stderr
    # and after it, under the summary table
    assert f"{ARM}: 2 episodes ended in error; the first: {cause}" in done.stdout.splitlines()


# ---- money: the balance of a Moonshot account against the run's upper bound ------------------
KIMI = "kimi"
KIMI_KEY = "sk-kimi-the-right-one-0123456789"


def kimi(api_base: str, **fields) -> dict:
    return {"name": KIMI, "model": "moonshot/kimi-k2.6", "api_base": api_base, "api_key_env": KEY_ENV,
            "max_concurrency": 2, "protocol": FAST_PROTOCOL, **fields}


def upper_bound(path: Path) -> float:
    """The dry run's upper bound of the sweep's Kimi arm (every call at its step cap and output cap)."""
    from orchestrator.estimate import estimate
    from orchestrator.sweep import load_sweep

    (row,) = [e for e in estimate(load_sweep(path).episodes()) if e.name == KIMI]
    assert row.cost_max is not None
    return row.cost_max


# litellm has no listing of Moonshot's models: the preflight says so before it reads the balance
NOT_LISTED = f"preflight: {KIMI} not checked (moonshot: litellm has no model listing); its first call will tell"


class PastPreflight(Exception):
    """Raised where the run would start Ray: the preflight let it through."""


def stop_before_ray(monkeypatch) -> None:
    def connect(address=None):
        raise PastPreflight

    monkeypatch.setattr("orchestrator.connect.connect", connect)


def test_a_moonshot_arm_whose_upper_bound_exceeds_the_balance_is_one_line(refused_run, monkeypatch):
    """Moonshot reports the account's balance (GET /v1/users/me/balance, USD on its international
    platform): a run whose upper bound there is above it is refused before it spends anything,
    where the study's Kimi leg died at launch when Moonshot refused its full-size batches."""
    monkeypatch.setenv(KEY_ENV, KIMI_KEY)
    with ScriptedServer(persona="moonshot", model="kimi-k2.6", api_key=KIMI_KEY, balance=0.5, voucher=0.25) as srv:
        code, err, path = refused_run(kimi(srv.url))
        assert [r.path for r in srv.requests] == ["/v1/users/me/balance"]  # the balance only: nothing spent
    bound = upper_bound(path)
    assert bound > 0.75
    assert code == 2
    assert err.splitlines() == [NOT_LISTED, (
        f"gridbench: {path}: models[1].api_key_env: {KIMI}: balance $0.75 at {srv.url}/users/me/balance is below "
        f"the run's upper bound there, ${bound:,.2f} (every call at its step cap and output cap) (the account of "
        f"the key in {KEY_ENV}) (--over-balance runs it anyway)")]


def test_a_balance_that_covers_the_bound_passes_and_the_preflight_names_it(tmp_path, monkeypatch, capfd):
    """Within the balance the run goes on (here, to where it would start Ray), its preflight line
    naming the balance and the bound; a ``--max-cost`` below the balance bounds the run instead,
    with the calls that may be in flight when it is reached."""
    from orchestrator.preflight import check_balances
    from orchestrator.sweep import load_sweep

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, KIMI_KEY)
    stop_before_ray(monkeypatch)
    with ScriptedServer(persona="moonshot", model="kimi-k2.6", api_key=KIMI_KEY, balance=1000) as srv:
        path = sweep_file(tmp_path / "kimi.yaml", models=[{"name": "oracle", "model": "builtin/oracle"}, kimi(srv.url)])
        bound = upper_bound(path)
        with pytest.raises(PastPreflight):
            run_cli(["run", str(path), "--out", str(tmp_path / "results")], capfd)
        err = capfd.readouterr().err
        assert (f"preflight: {KIMI}: balance $1,000.00 at {srv.url}/users/me/balance covers the run's upper bound "
                f"there, ${bound:,.2f} (every call at its step cap and output cap)") in err
        srv.balance = bound / 2  # below the bound, above a budget and what may be in flight when it is reached
        (funds,) = check_balances(load_sweep(path, max_cost=bound / 10))
        assert funds.bound is not None and bound / 10 < funds.bound < bound / 2
        assert funds.line().startswith(f"preflight: {KIMI}: balance ${bound / 2:,.2f} at {srv.url}/users/me/balance "
                                       f"covers the run's upper bound there, ${funds.bound:,.2f} (--max-cost "
                                       f"{bound / 10:,.2f} and the calls in flight when it is reached)")
        assert not srv.chat_requests


def test_over_balance_lets_the_run_go_on(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(KEY_ENV, KIMI_KEY)
    stop_before_ray(monkeypatch)
    with ScriptedServer(persona="moonshot", model="kimi-k2.6", api_key=KIMI_KEY, balance=0.01) as srv:
        path = sweep_file(tmp_path / "kimi.yaml", models=[kimi(srv.url)])
        with pytest.raises(PastPreflight):
            run_cli(["run", str(path), "--out", str(tmp_path / "results"), "--over-balance"], capfd)
        err = capfd.readouterr().err
    assert (f"preflight: {KIMI}: balance $0.01 at {srv.url}/users/me/balance is below the run's upper bound "
            f"there, ${upper_bound(path):,.2f} (every call at its step cap and output cap): running anyway "
            "(--over-balance)") in err.splitlines()


def test_a_key_moonshot_refuses_is_one_line_without_the_key(refused_run, monkeypatch):
    monkeypatch.setenv(KEY_ENV, FAKE_KEY)
    with ScriptedServer(persona="moonshot", model="kimi-k2.6", api_key=KIMI_KEY) as srv:
        code, err, path = refused_run(kimi(srv.url))
    assert code == 2
    assert err.splitlines() == [NOT_LISTED, f"gridbench: {path}: models[1].api_key_env: {KIMI}: moonshot's balance "
                                            f"at {srv.url} refused the key in {KEY_ENV} (HTTP 401)"]
