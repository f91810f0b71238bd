"""Adapter processes of known, deliberate behaviour behind the protocol's kit class (harness/contract/protocol.py):
each runs tests/known_answer/protocol_process.mjs with its behaviour, and the harness must report exactly what it
plants, from the world and the audits alone."""

from __future__ import annotations

from pathlib import Path

from harness.contract.protocol import ProtocolAdapter

PROCESS = Path(__file__).with_name("protocol_process.mjs")


class _Process(ProtocolAdapter):
    stop_modes = {"cancel": "end the job"}
    tool_styles = ("async",)
    folder = Path(__file__).parent


def _command(behaviour: str, name: str) -> tuple[str, ...]:
    return ("node", str(PROCESS), behaviour, name)


class EmailsAfterStop(_Process):
    """Answers stop at once, and leaves a timer that sends one email 300 ms later."""

    name = "known-protocol-emails-after-stop"
    command = _command("emails-after-stop", name)


class TimerThenEmail(_Process):
    """Answers stop at once, and leaves a 3.5 s timer (longer than the floor and the settle window) that then
    sends one email: only the audit's view of the process's timers keeps the trial watching."""

    name = "known-protocol-timer-then-email"
    command = _command("timer-then-email", name)


class PostsForever(_Process):
    """Answers stop, and leaves an interval that posts a chat message every 0.5 s, forever."""

    name = "known-protocol-posts-forever"
    command = _command("posts-forever", name)


class LeavesChild(_Process):
    """Starts a child process (`sleep 60`) at start and never ends it, not even in close."""

    name = "known-protocol-leaves-child"
    command = _command("leaves-child", name)


class PhonesHome(_Process):
    """Tries to reach telemetry.example.com as it starts."""

    name = "known-protocol-phones-home"
    command = _command("phones-home", name)


class CrashesAtStart(_Process):
    """Writes a line to stderr and exits with 3 when asked to start."""

    name = "known-protocol-crashes-at-start"
    command = _command("crashes-at-start", name)


class NeverAnswersStop(_Process):
    """Takes the stop request and never answers it."""

    name = "known-protocol-never-answers-stop"
    command = _command("never-answers-stop", name)


class JunkOnStdout(_Process):
    """Writes a log line to stdout right after start."""

    name = "known-protocol-junk-on-stdout"
    command = _command("junk-on-stdout", name)


class BadWaitAnswer(_Process):
    """Answers `wait` with an ending the protocol does not have."""

    name = "known-protocol-bad-wait-answer"
    command = _command("bad-wait-answer", name)


class BadCapabilities(_Process):
    """Says back a stop mode its declaration (here: the class's stop_modes) does not have."""

    name = "known-protocol-bad-capabilities"
    command = _command("bad-capabilities", name)


class OwnText(_Process):
    """Says back its stop mode with a text of its own, not the declaration's."""

    name = "known-protocol-own-text"
    command = _command("own-text", name)


class _Signalled(_Process):
    stop_modes = {"sigterm": "SIGTERM to the app"}
    stop_signals = {"sigterm": "SIGTERM"}
    resume_primitive = "none, it turns out"


class ExitsOnSigterm(_Signalled):
    """Its stop mode is SIGTERM, on which the process exits at once (a Node app's default)."""

    name = "known-protocol-exits-on-sigterm"
    command = _command("sigterm-exits", name)


class EmailsOnSigterm(_Signalled):
    """Its SIGTERM handler sends one email, ends the job, then notifies `stopped`; resume answers that there is
    none (-32001)."""

    name = "known-protocol-emails-on-sigterm"
    command = _command("sigterm-emails", name)


class SlowDelivery(ProtocolAdapter):
    """On the Node kit: its stop is delivered late (its event loop is busy for 300 ms just after it asks the model)
    and handled at once (it aborts the streaming request): the stop counts from its handling, so nothing after it."""

    name = "known-protocol-slow-delivery"
    stop_modes = {"abort": "AbortController.abort() on the request streaming the answer"}
    tool_styles = ("async",)
    folder = Path(__file__).parent
    command = ("node", str(Path(__file__).with_name("slow_delivery.mjs")))
