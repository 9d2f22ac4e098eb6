"""Infrastructure is not the model, and long waits are not failures (docs/cluster.md, the section
of that name): the study's R1 post-mortem as tested properties.

- A transport failure (5xx, a timeout, a dropped or refused connection, a malformed body, empty
  ``choices``, a 429) never counts toward ``requery_limit`` and never ends an episode
  ``parse_failed``: retried, and past the retries an ``error`` of its class (rerun by
  ``--retry-errors``). Against the scripted server over real HTTP, through the real agent.
- An answer cut at the token cap is the model's: parsed like any other, so a blank one counts
  toward ``requery_limit`` and one with an answer line is taken (the study's rule).
- A batch that fails as a whole (refused, unreadable, failed by the provider, expired or
  cancelled whole) never becomes per-request parse failures: its requests go again or fail as the
  synchronous call would, and the arm's progress says so.
- A thinking turn of many minutes (within the request timeout) is waited for once, and a batch in
  progress for an hour is polled, never resubmitted; the driver declares no such episode lost.

Fast: the retries sleep nothing, and long waits run on simulated time (``testing.simulated``: an
event loop whose clock jumps to its next timer; the driver's loop with its clock and Ray's waits
faked). No Ray cluster.
"""

from __future__ import annotations

import asyncio
import io
import re
import socket
from types import SimpleNamespace

import pytest
import ray
from aiohttp import web
from rich.console import Console

import env
from agents import InfraError, ModelConfig, Protocol, Turn, resolve_protocol
from agents.builtin import make_builtin
from agents.caller import RetryPolicy
from agents.litellm_transport import litellm_module
from agents.llm import LLMAgent
from app.commands.run import RichReporter, batch_news
from env.oracle import solve
from episodes.episode import run_episode
from orchestrator import driver as driver_module
from orchestrator.batching import BatchBroker, EpisodeGateway
from orchestrator.estimate import Lengths
from orchestrator.sweep import parse_sweep
from testing import simulated
from testing.dispatch import FakeActors
from testing.scripted_server import ScriptedServer
from traces import ERROR, EpisodeIdentity, encode_episode, read_episodes

KEY_ENV = "GRIDBENCH_INFRA_TEST_KEY"
NAMES = ("left", "right", "forward", "pickup", "toggle", "done")
# the study's rule (study-baseline): a reply with no action is sent again, three in a row end the episode
STUDY = {"preset": "study-baseline", "icl_example": False, "tile_size": 8, "observation": "text"}
GRIDBENCH = {"preset": "gridbench-final", "icl_example": False, "observation": "text",
             "invalid_output": "requery", "requery_limit": 3}
# each answer's parseable reply and an unparseable one, per protocol style
REPLIES = {"study": ("FINAL_OUTPUT: TURN_LEFT", "Let me look at the maze again."),
           "gridbench": ("ACTION: left", "Let me look at the maze again.")}
ROUTES = [  # (model, client): the OpenAI shape through both clients, Anthropic's and Gemini's through litellm
    ("openai/scripted", "litellm"), ("openai/scripted", "openai"),
    ("anthropic/claude-opus-4-8", "litellm"), ("gemini/gemini-3.8-flash", "litellm"),
]


def act_once(agent, maze, protocol):
    """The agent's decision on the maze's first turn; the agent is closed after."""
    async def turn():
        try:
            agent.caller.begin_turn(1)
            return await agent.act(Turn(maze, protocol, 1, env.initial_state(maze), (), 57))
        finally:
            await agent.aclose()

    return asyncio.run(turn())


def play_once(agent, maze, protocol):
    """One whole episode of the agent on the maze; the agent is closed after."""
    async def play():
        try:
            return await run_episode(maze, agent, protocol, identity())
        finally:
            await agent.aclose()

    return asyncio.run(play())


async def no_sleep(seconds: float) -> None:
    await asyncio.sleep(0)


def fast(max_retries: int) -> RetryPolicy:
    """The agent's retry policy at test speed: backoffs of milliseconds (slept as nothing), rate
    limits waited out for half a second of requested waits."""
    return RetryPolicy(max_retries=max_retries, base_s=0.01, cap_s=0.02, rate_limited_s=0.5)


def identity(episode: str = "e", model: str = "m") -> EpisodeIdentity:
    return EpisodeIdentity(run="r", episode_id=episode, model_name=model, model=model, condition="c", repeat=0,
                           maze_id="example")


def scripted_agent(srv: ScriptedServer, model: str, client: str, protocol: Protocol, retries: int,
                   **params) -> LLMAgent:
    base = srv.gemini_url if model.startswith("gemini/") else srv.url
    config = ModelConfig.for_model(model, api_base=base, api_key_env=KEY_ENV, client=client,
                                   params={"timeout": 0.5, **params})
    return LLMAgent(config, protocol, retry=fast(retries), sleep=no_sleep)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-gridbench-infra-FAKE-0123456789")


@pytest.fixture(scope="module", autouse=True)
def _litellm_loaded():
    litellm_module()  # imported once, outside any test's own time


@pytest.fixture(scope="module")
def maze():
    return env.resolve_maze("example")


@pytest.fixture(scope="module")
def server():
    """One scripted server for the tests whose script is one item (the last item repeats)."""
    with ScriptedServer(script=["ACTION: left"], hang_s=5) as srv:
        yield srv


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dropping(positions: set[int]):
    """An ``on_request`` that closes the connection, unanswered, on the chat requests at ``positions``."""
    seen = [0]

    def on_request(record) -> str | None:
        seen[0] += 1
        return "drop" if seen[0] - 1 in positions else None

    return on_request


# ---- 1. transport failures never count as re-asks ----------------------------------------------
def faults_of(model: str) -> list:
    """Every transport failure the route can meet: the OpenAI shape's empty ``choices`` has no
    Anthropic or Gemini form (a Gemini answer with no candidate is a blocked prompt, which litellm
    reads as a ``content_filter`` reply of the model)."""
    out: list = ["500", "503", "hang", "malformed", {"fault": "429", "retry_after": 0.05}, "DROP"]
    if model.startswith("openai/"):
        out.insert(4, "empty_choices")
    return out


@pytest.mark.parametrize("style", ["study", "gridbench"])
@pytest.mark.parametrize("model, client", ROUTES)
def test_transport_failures_between_unparseable_replies_never_count_toward_requery_limit(maze, model, client, style):
    """Two unparseable replies, then every kind of transport failure, then an answer: with
    ``requery_limit`` 3 the turn takes the answer after three calls. Had any failure counted as a
    re-query the episode would have ended ``parse_failed`` at the third."""
    good, bad = REPLIES[style]
    faults = faults_of(model)
    script = [bad, *faults[:3], bad, *faults[3:], good]
    drops = {i for i, item in enumerate(script) if item == "DROP"}
    protocol = resolve_protocol(STUDY if style == "study" else GRIDBENCH)
    with ScriptedServer(script=[s if s != "DROP" else good for s in script], hang_s=5,
                        on_request=dropping(drops)) as srv:
        agent = scripted_agent(srv, model, client, protocol, retries=len(faults))

        d = act_once(agent, maze, protocol)
        asked = len(srv.chat_requests)
    assert asked == len(script)  # one HTTP request per attempt, each failure retried once
    assert d.ending is None and d.action == 0 and d.parse == "exact"
    assert (d.usage.calls, d.usage.reasks, d.usage.retries) == (3, 2, len(faults))


FAULT_CLASSES = {  # the fault, its class on each client (test_faults.py has them under Ray)
    "500": ("InternalServerError", "InternalServerError"),
    "503": ("ServiceUnavailableError", "ServiceUnavailableError"),
    "hang": ("Timeout", "Timeout"),
    "malformed": ("InternalServerError", "InternalServerError"),
    "empty_choices": ("EmptyChoices", "EmptyChoices"),
    "429": ("RateLimitError", "RateLimitError"),
    "refused": ("InternalServerError", "InternalServerError"),  # nothing listens: an outage
}


@pytest.mark.parametrize("client", ["litellm", "openai"])
@pytest.mark.parametrize("fault", list(FAULT_CLASSES))
def test_a_transport_failure_past_the_retries_ends_the_episode_as_its_error_never_parse_failed(maze, server, fault,
                                                                                             client):
    protocol = resolve_protocol(STUDY)
    server.script = [{"fault": "429", "retry_after": 0.05} if fault == "429" else fault]
    # "refused": the endpoint is gone, nothing listens on its port
    srv = SimpleNamespace(url=f"http://127.0.0.1:{unused_port()}/v1") if fault == "refused" else server
    agent = scripted_agent(srv, "openai/scripted", client, protocol, retries=1)

    ep = play_once(agent, maze, protocol).episode
    assert ep.termination == ERROR and ep.error_class == FAULT_CLASSES[fault][client == "openai"], ep.error_message
    assert ep.parse_failures == 0 and ep.steps == 0 and ep.ending_reply is None
    attempts = int(re.search(r"gave up after (\d+) attempts", ep.error_message or "").group(1))
    assert attempts > 2 if fault == "429" else attempts == 2  # a 429 is waited out, the others retried once


def test_a_gemini_answer_litellm_cannot_read_is_retried_not_a_bad_request(maze):
    """litellm reports a Gemini body cut short as a 422 ``BadRequestError`` ("Error converting to
    valid response block"); it is a malformed answer, retried like the others (it failed the
    episode at once before)."""
    protocol = resolve_protocol(STUDY)
    with ScriptedServer(script=["malformed", "malformed", REPLIES["study"][0]]) as srv:
        agent = scripted_agent(srv, "gemini/gemini-3.8-flash", "litellm", protocol, retries=2)

        d = act_once(agent, maze, protocol)
    assert (d.action, d.usage.calls, d.usage.retries) == (0, 1, 2)
    with ScriptedServer(script=["malformed"]) as srv:
        agent = scripted_agent(srv, "gemini/gemini-3.8-flash", "litellm", protocol, retries=1)
        with pytest.raises(InfraError) as err:
            act_once(agent, maze, protocol)
    assert err.value.error_class == "InternalServerError" and "2 attempts" in str(err.value)


# ---- 2. an answer cut at the token cap is the model's ------------------------------------------
@pytest.mark.parametrize("model, client", ROUTES)
def test_an_answer_cut_at_the_token_cap_counts_as_the_study_counts_it(maze, model, client):
    """Each provider's cut (OpenAI's ``length``, Anthropic's ``max_tokens``, Gemini's
    ``MAX_TOKENS``) is read as the model's answer: one that still holds its answer line is a
    step, and three blank ones in a row end the episode ``parse_failed`` (the study's rule: a
    token-cap truncation counts, a transport failure does not)."""
    protocol = resolve_protocol(STUDY)
    cut = [{"reply": REPLIES["study"][0], "finish_reason": "length"}, {"reply": "", "finish_reason": "length"}]
    with ScriptedServer(script=cut) as srv:
        agent = scripted_agent(srv, model, client, protocol, retries=1)

        result = play_once(agent, maze, protocol)
        asked = len(srv.chat_requests)
    ep = result.episode
    (step,) = result.steps
    assert (step.action, step.finish_reason, step.usage.retries) == ("left", "length", 0)
    assert ep.termination == "parse_failed" and ep.parse_failures == 3 and asked == ep.usage.calls == 4


# ---- 3. a batch that fails as a whole ------------------------------------------------------------
class Handle:
    """A broker's methods as a Ray actor handle calls them (``.remote``), in this event loop."""

    def __init__(self, broker):
        self.broker = broker

    def __getattr__(self, name: str):
        return SimpleNamespace(remote=getattr(self.broker, name))


def batch_arm(poll_s: float = 60.0) -> ModelConfig:
    # an OpenAI batch arm on the openai client: its lines are chat bodies, its answers chat completions
    return ModelConfig.for_model("openai/gpt-5", name="arm", tier="batch", client="openai",
                                 api_base="http://127.0.0.1:9/v1", api_key_env=KEY_ENV,
                                 batch={"poll_s": poll_s, "round_wait_s": 5.0})


def oracle_answers(maze):
    """The answer to each request: the oracle's action for the step its custom id names."""
    plan = solve(maze).plan

    def answer(custom_id: str, body: dict) -> dict:
        step = int(re.search(r"-s(\d+)-", custom_id).group(1))
        return simulated.chat_answer(f"ACTION: {NAMES[plan[step - 1]]}")

    return answer


def play_batch_arm(tmp_path, monkeypatch, maze, provider, episodes: int = 2, poll_s: float = 60.0):
    """``episodes`` episodes of one batch arm through its broker (no Ray) on simulated time:
    (their results, the broker's progress, the simulated seconds it took)."""
    config = batch_arm(poll_s)
    protocol = resolve_protocol(GRIDBENCH)
    broker = BatchBroker.__ray_actor_class__(config, str(tmp_path / "batches" / "arm.jsonl"), provider=provider)

    async def main(loop):
        monkeypatch.setattr("orchestrator.batching.time", SimpleNamespace(monotonic=loop.time))
        gateways = [EpisodeGateway(Handle(broker), f"e{i}") for i in range(episodes)]
        for g in gateways:  # every episode of the arm is live before the first round
            await g.join()

        async def one(i, gateway):
            agent = LLMAgent(config, protocol, seed=i, batch=gateway)
            try:
                return await run_episode(maze, agent, protocol, identity(f"e{i}", "arm"))
            finally:
                await agent.aclose()
                await gateway.leave()

        results = await asyncio.gather(*(one(i, g) for i, g in enumerate(gateways)))
        return results, broker.progress(), loop.time()

    return simulated.run(main)


@pytest.mark.parametrize("fate, error_class", [
    ("refuse", "ServiceUnavailableError"),  # the provider refuses the batch: a 503
    ("unreadable", "APIConnectionError"),  # its status read fails
    ("expire_whole", None), ("cancel_whole", None), ("expire", None),  # requests never run go again
])
def test_a_batch_that_fails_or_expires_as_a_whole_is_never_a_parse_failure(tmp_path, monkeypatch, maze, fate,
                                                                          error_class):
    provider = simulated.MemoryBatches(oracle_answers(maze), latency=300.0, fates=[fate, "ok"])
    results, progress, _ = play_batch_arm(tmp_path, monkeypatch, maze, provider)
    optimal = solve(maze).optimal_actions
    for r in results:
        ep = r.episode
        assert ep.termination == "solved" and ep.steps == optimal and ep.parse_failures == 0
        assert ep.usage.calls == optimal and ep.usage.reasks == 0
    first = [r.steps[0].usage.retries for r in results]
    unprocessed = {"expire_whole": 2, "cancel_whole": 2, "expire": 1}.get(fate, 0)
    if error_class is not None:  # failed as the call would: retried by the agent, a new request
        assert first == [1, 1] and progress["failed"] == 1 and error_class in progress["last_failure"]
        assert progress["again"] == 0
    else:  # never run: the same request goes again, unknown to the agent
        assert first == [0, 0] and progress["failed"] == 0 and progress["again"] == unprocessed
        assert sum(cid.endswith("-r1") for _, cid in provider.submitted) == unprocessed
    # nothing else sent twice (an unreadable batch's lines may have run: its requests went again as new ones)
    assert len(provider.submitted) == 2 * optimal + (2 if fate == "unreadable" else unprocessed)
    news = " ".join(batch_news("arm", {}, progress))
    assert ("failed as a whole" in news) == (error_class is not None) and ("unprocessed" in news) == bool(unprocessed)


def test_a_batch_the_provider_fails_whole_ends_its_episodes_as_errors_not_parse_failed(tmp_path, monkeypatch, maze):
    provider = simulated.MemoryBatches(oracle_answers(maze), latency=300.0, fates=["fail_whole"])
    results, progress, _ = play_batch_arm(tmp_path, monkeypatch, maze, provider)
    for r in results:
        ep = r.episode
        assert ep.termination == ERROR and ep.error_class == "BadRequestError" and "validation" in ep.error_message
        assert ep.parse_failures == 0 and ep.steps == 0
    assert progress["failed"] == 1 and "failed as a whole" in progress["last_failure"]
    # the run command's progress display prints it, once
    out = io.StringIO()
    reporter = RichReporter(Console(file=out, width=200))
    reporter.batches({"arm": progress})
    reporter.batches({"arm": progress})
    assert out.getvalue().count("batch arm: 1 batch failed as a whole") == 1


# ---- 4 and 5. long waits are not failures ------------------------------------------------------
def test_a_batch_in_progress_for_an_hour_is_polled_not_resubmitted(tmp_path, monkeypatch, maze):
    """Each round's batch stays in progress for an hour of simulated time (the poll every 60 s):
    every request is submitted once, each batch is polled until it ends, and both episodes solve."""
    provider = simulated.MemoryBatches(oracle_answers(maze), latency=3600.0)
    results, progress, elapsed = play_batch_arm(tmp_path, monkeypatch, maze, provider)
    optimal = solve(maze).optimal_actions
    assert all(r.episode.termination == "solved" and r.episode.usage.retries == 0 for r in results)
    ids = [cid for _, cid in provider.submitted]
    assert len(ids) == len(set(ids)) == 2 * optimal  # one line per request, none sent again
    assert len(provider.batches) == optimal  # lockstep: both episodes' requests in one batch a round
    assert all(60 <= b.polls <= 62 for b in provider.batches.values())  # polled every 60 s for the hour
    assert optimal * 3600 <= elapsed < optimal * (3600 + 60 + 10)
    assert (progress["again"], progress["failed"], progress["in_flight"]) == (0, 0, {})


async def thinking_server(minutes: float, plan: list[int]):
    """An OpenAI-compatible endpoint in this event loop whose every answer takes ``minutes`` of
    thinking: the oracle's next action, one per request. (its runner, its URL, the requests seen)"""
    seen: list[float] = []

    async def chat(request: web.Request) -> web.Response:
        seen.append(asyncio.get_running_loop().time())
        await request.json()
        await asyncio.sleep(minutes * 60)
        action = NAMES[plan[min(len(seen), len(plan)) - 1]]
        return web.json_response(simulated.chat_answer(f"ACTION: {action}"))

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/v1", seen


@pytest.mark.parametrize("minutes, timeout", [(12, None), (25, 1800)])
def test_a_thinking_turn_of_many_minutes_within_the_timeout_is_waited_for_once(maze, minutes, timeout):
    """The one bound on a turn is the request timeout (``params.timeout``: 900 s by default, 1800 s
    for the frontier sweep's flex arm): a 12-minute answer under the default and a 25-minute one
    under 1800 s are each waited for, one request per step, on simulated time."""
    protocol = resolve_protocol(GRIDBENCH)
    plan = list(solve(maze).plan)

    async def main(loop):
        runner, url, seen = await thinking_server(minutes, plan)
        params = {} if timeout is None else {"timeout": timeout}
        config = ModelConfig.for_model("openai/thinker", api_base=url, client="openai", params=params)
        agent = LLMAgent(config, protocol)
        try:
            return await run_episode(maze, agent, protocol, identity()), seen, loop.time()
        finally:
            await agent.aclose()
            await runner.cleanup()

    result, seen, elapsed = simulated.run(main)
    ep = result.episode
    assert ep.termination == "solved" and ep.steps == len(plan) == len(seen) and ep.usage.retries == 0
    assert len(plan) * minutes * 60 <= elapsed < len(plan) * (minutes * 60 + 1)


def test_a_turn_longer_than_the_timeout_is_a_timeout_of_that_length_never_a_parse_failure(maze):
    """Past the request timeout the attempt is a ``Timeout``, retried (the only resubmission of a
    synchronous turn), and past the retries the episode is an ``error``: 16-minute answers under
    the default 900 s."""
    protocol = resolve_protocol(STUDY)
    plan = list(solve(maze).plan)

    async def main(loop):
        runner, url, seen = await thinking_server(16, plan)
        config = ModelConfig.for_model("openai/thinker", api_base=url, client="openai", params={"retries": 1})
        agent = LLMAgent(config, protocol)
        try:
            return await run_episode(maze, agent, protocol, identity()), seen
        finally:
            await agent.aclose()
            await runner.cleanup()

    result, seen = simulated.run(main)
    ep = result.episode
    assert ep.termination == ERROR and ep.error_class == "Timeout" and ep.parse_failures == 0
    assert len(seen) == 2 and 900 <= seen[1] - seen[0] < 905  # the first attempt waited exactly its 900 s


@pytest.mark.parametrize("batch_arm_in_flight", [False, True])
def test_the_driver_waits_for_an_episode_whose_turn_takes_hours(tmp_path, monkeypatch, maze_dir, batch_arm_in_flight):
    """The driver's loop (``Driver._run``) over an episode that answers after three hours of
    simulated time (a synchronous turn, or a batch arm's batch in flight all along): it waits,
    starts it once, reports no retry, and writes it once with ``attempts`` 1. It declares an
    episode lost only when its actor dies (tests/reliability/test_faults.py)."""
    hours = 3 * 3600
    entry = {"name": "slow", "model": "openai/slow", "api_base": "http://127.0.0.1:9/v1", "max_concurrency": 1}
    sweep = parse_sweep({"name": "t", "mazes": str(maze_dir / "scale-8.json"), "models": [entry]}, "t.yaml")
    (spec,) = sweep.episodes()
    finished = asyncio.run(run_episode(spec.maze, make_builtin("oracle"), spec.condition.protocol,
                                       spec.identity("run")))
    encoded = encode_episode(finished)
    clock = [0.0]

    def wait(refs, num_returns=1, timeout=None):
        clock[0] += timeout or 0.0
        return (list(refs), []) if clock[0] >= hours else ([], list(refs))

    def get(ref, timeout=None):
        return ref if isinstance(ref, dict) else encoded  # a broker's progress, or the episode

    shown: list[dict] = []
    retried: list[tuple] = []
    progress = {"rounds": 1, "submitted": 1, "in_flight": {"batch_0": 0.0}, "again": 0, "failed": 0}

    class Reporter(driver_module.Reporter):
        def retrying(self, spec, attempts, reason):
            retried.append((spec, attempts, reason))

        def batches(self, p):
            shown.append(p)

    driver = driver_module.Driver(sweep, tmp_path / "run", reporter=Reporter())
    driver.actors = driver.scheduler.actors = FakeActors()  # type: ignore[assignment]
    if batch_arm_in_flight:
        def progress_now():
            progress["in_flight"] = {"batch_0": clock[0]}
            return dict(progress)

        driver.scheduler.brokers = {"slow": SimpleNamespace(progress=SimpleNamespace(remote=progress_now))}
    driver.pending.fill([spec], Lengths())
    monkeypatch.setattr(ray, "wait", wait)
    monkeypatch.setattr(ray, "get", get)
    monkeypatch.setattr(driver_module, "time", SimpleNamespace(monotonic=lambda: clock[0], sleep=lambda s: None))
    try:
        assert driver._run() is True
    finally:
        driver.writer.shutdown()
    assert clock[0] >= hours and not retried
    assert [s.episode_id for _, s in driver.actors.started] == [spec.episode_id]  # started once, never again
    (row,) = read_episodes(driver.store).itertuples()  # written once
    assert row.episode_id == spec.episode_id and row.termination == "solved"
    if batch_arm_in_flight:  # the progress display heard of the batch's age all along
        assert max(p["slow"]["in_flight"]["batch_0"] for p in shown) >= hours - driver_module.BATCH_REPORT_S
