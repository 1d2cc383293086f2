"""Settings layers, workspace trust and config files read as bounded regular files."""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.settings import config, trust

from tests.support import PYTHON, REPO, child_env

REMOTE = 'provider = "openai"\nmodel = "m"\nendpoint = "http://127.0.0.1:9/v1"\napi_key_env = "SOME_SECRET_VAR"\n'


def _config_path(folder: Path) -> Path:
    """``folder/config.toml``, its folder made (a workspace's ``.cairn`` or the user's ``cairn``)."""
    folder.mkdir(exist_ok=True)
    return folder / "config.toml"


def _ws_file(ws: Path, text: str) -> None:
    _config_path(ws / ".cairn").write_text(text)


def _load(workspace: str, editor: dict[str, Any] | None = None) -> tuple[config.Settings, list[str]]:
    """``config.load``, its warnings (fixed errors) as their ``E_CODE: message`` lines."""
    settings, warnings = config.load(workspace, editor)
    assert all(isinstance(w, CairnError) for w in warnings)
    return settings, [config.line(w) for w in warnings]


def _codes(warnings: list[str]) -> list[str]:
    return [w.split(":", 1)[0] for w in warnings]


def test_untrusted_file_keeps_its_local_settings_and_loses_its_off_machine_ones(workspace: Path) -> None:
    _ws_file(workspace, REMOTE + 'mode = "manual"\ninstruction_files = ["RULES.md"]\n')
    s, warnings = _load(str(workspace))
    assert (s.provider, s.endpoint, s.apiKeyEnv) == ("extractive", "", "CAIRN_OPENAI_API_KEY")
    assert (s.mode, s.instructionFiles, s.model) == ("manual", ("RULES.md",), "")
    assert _codes(warnings) == ["E_WORKSPACE_UNTRUSTED"]
    assert "provider, endpoint, api_key_env, model" in warnings[0]
    trust.trust(str(workspace))
    s, warnings = _load(str(workspace))
    assert (s.provider, s.endpoint, s.apiKeyEnv, s.model) == ("openai", "http://127.0.0.1:9/v1", "SOME_SECRET_VAR", "m")
    assert warnings == []


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_numbers_must_be_finite(workspace: Path, value: str) -> None:
    """A nan timer never compares due; an infinite timeout never ends a hung request."""
    _ws_file(workspace, f"timeout_seconds = {value}\nseal_idle_minutes = {value}\n")
    s, warnings = _load(str(workspace))
    assert s == config.Settings() and _codes(warnings) == ["E_CONFIG_INVALID"] * 2
    assert "finite" in warnings[0]
    assert config.from_request({"idleMinutes": float(value)}) == config.Settings()


def test_an_untrusted_files_auto_mode_does_not_write_unreviewed_into_the_users_global_root(
        workspace: Path, user_config_home: Path) -> None:
    (user_config_home / "cairn").mkdir()
    (user_config_home / "cairn/config.toml").write_text('memory_roots = ["/home/u/memory"]\n')
    _ws_file(workspace, 'mode = "auto"\n')
    s, warnings = _load(str(workspace))
    assert (s.mode, s.memoryRoots) == ("propose", ("/home/u/memory",))
    assert _codes(warnings) == ["E_WORKSPACE_UNTRUSTED"] and 'mode = "auto"' in warnings[0]
    assert 'your mode "propose" is used' in warnings[0]
    assert _load(str(workspace), {"mode": "auto"}) == (attrs.evolve(s, mode="auto"), [])  # the user's choice
    _ws_file(workspace, 'mode = "auto"\n')
    trust.trust(str(workspace))
    assert _load(str(workspace)) == (attrs.evolve(s, mode="auto"), [])


def test_an_untrusted_files_auto_mode_is_never_taken_and_its_keys_share_one_warning(
        workspace: Path, user_config_home: Path) -> None:
    """``mode = "auto"`` from a cloned repository's own file let a review write its instruction files without
    asking; with ``provider`` in the same file, two E_WORKSPACE_UNTRUSTED lines were printed for it."""
    _ws_file(workspace, 'mode = "auto"\nmemory_roots = ["notes"]\n')  # even with no root outside the workspace
    s, warnings = _load(str(workspace))
    assert (s.mode, s.memoryRoots) == ("propose", ("notes",))
    assert _codes(warnings) == ["E_WORKSPACE_UNTRUSTED"] and 'mode = "auto"' in warnings[0]
    _ws_file(workspace, 'mode = "auto"\nprovider = "openai"\n')
    s, warnings = _load(str(workspace))
    assert (s.mode, s.provider) == ("propose", "extractive")
    assert _codes(warnings) == ["E_WORKSPACE_UNTRUSTED"] and 'provider, mode = "auto"' in warnings[0]
    _ws_file(workspace, 'mode = "manual"\n')  # a stricter mode is the repository's to choose
    assert _load(str(workspace)) == (attrs.evolve(s, mode="manual"), [])
    (user_config_home / "cairn").mkdir()
    (user_config_home / "cairn/config.toml").write_text('mode = "auto"\n')  # the user's own auto: no warning
    _ws_file(workspace, 'mode = "auto"\n')
    assert _load(str(workspace)) == (attrs.evolve(s, mode="auto"), [])


def test_an_untrusted_file_does_not_choose_the_model_the_users_key_pays_for(
        workspace: Path, user_config_home: Path) -> None:
    (user_config_home / "cairn").mkdir()
    (user_config_home / "cairn/config.toml").write_text(
        'provider = "openai"\nendpoint = "http://127.0.0.1:7/v1"\nmodel = "small"\n')
    _ws_file(workspace, 'model = "the-most-expensive-one"\n')
    s, warnings = _load(str(workspace))
    assert (s.provider, s.model) == ("openai", "small")
    assert _codes(warnings) == ["E_WORKSPACE_UNTRUSTED"] and "model" in warnings[0]
    trust.trust(str(workspace))
    assert _load(str(workspace)) == (attrs.evolve(s, model="the-most-expensive-one"), [])


@pytest.mark.parametrize("outside", ["/home/someone/.ssh", "~/.ssh", "../other-project/.agents/memory",
                                     "notes/../../x", "..\\x"])
def test_an_untrusted_file_keeps_memory_roots_inside_the_workspace(workspace: Path, outside: str) -> None:
    """Reviews write into memory roots (unreviewed in auto mode): one outside the workspace is the user's choice."""
    _ws_file(workspace, f'mode = "auto"\nmemory_roots = ["notes", {json.dumps(outside)}]\n')
    s, warnings = _load(str(workspace))
    assert (s.mode, s.memoryRoots) == ("propose", ("notes",))  # auto, too, is the user's choice
    assert _codes(warnings) == ["E_WORKSPACE_UNTRUSTED"] and 'mode = "auto", memory_roots' in warnings[0]
    _ws_file(workspace, f'memory_roots = [{json.dumps(outside)}]\n')
    assert _load(str(workspace))[0].memoryRoots == ()  # the layers below decide
    trust.trust(str(workspace))
    # honoured, and as every reader takes it: absolute (`~` expanded, `..` resolved against the workspace)
    resolved = outside if "\\" in outside else os.path.normpath(
        os.path.join(str(workspace), os.path.expanduser(outside)))
    assert _load(str(workspace)) == (attrs.evolve(s, mode="propose", memoryRoots=(resolved,)), [])


def test_a_root_with_dot_dot_is_honoured_by_verify_and_reviews(workspace: Path) -> None:
    """`memory_roots = ["../shared"]` in a trusted workspace was kept as written, and each reader took it for
    a folder inside the workspace: `cairn verify` failed (E_PATH_INVALID_NAME: '..'), the backlog drain's
    review E_PATH_OUTSIDE_ROOT. It is the folder beside the workspace, as an absolute root is."""
    shared = workspace.parent / "shared"
    shared.mkdir()
    _ws_file(workspace, 'memory_roots = ["../shared", "notes/../kept"]\n')
    trust.trust(str(workspace))
    assert _load(str(workspace))[0].memoryRoots == (str(shared), "kept")
    env = child_env()
    run = [PYTHON, "-m", "cairn.server"]
    r = subprocess.run([*run, "remember", "-w", str(workspace), "--type", "user", "I prefer short commit messages",
                        "--json"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    [p] = json.loads(r.stdout)["proposals"]
    assert p["target"].startswith(str(shared) + os.sep)
    r = subprocess.run([*run, "accept", "-w", str(workspace), p["id"]], cwd=REPO, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([*run, "verify", "-w", str(workspace)], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "E_PATH_INVALID_NAME" not in r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("option,value", [("instruction_files", ".git/config"), ("instruction_files", "sub/.git/config"),
                                          ("instruction_files", ".cairn/config.toml"), ("memory_roots", ".cairn/journal"),
                                          ("memory_roots", ".git/hooks"), ("notes_dirs", ".git")])
def test_no_layer_points_memory_at_gits_or_cairns_own_files(workspace: Path, option: str, value: str) -> None:
    """A review appends to instruction files: ``.git/config`` names programs git runs."""
    _ws_file(workspace, f'{option} = ["AGENTS.md", {json.dumps(value)}]\n')
    s, warnings = _load(str(workspace))
    assert s == config.Settings()
    assert _codes(warnings) == ["E_CONFIG_INVALID"] and value in warnings[0]
    trust.trust(str(workspace))  # trust does not make them memory
    assert _load(str(workspace))[0] == config.Settings()
    assert config.merge(config.Settings(), {config._camel(option): [value]}, source="editor settings")[1]


@pytest.mark.parametrize("value", [".envrc", "Makefile", "scripts/setup.sh", "CMakeLists.txt", ".github/workflows/ci.md",
                                   "../home/.bashrc", "~/.bashrc", "/etc/profile", "docs/", ".md"])
def test_instruction_files_are_instruction_files_inside_the_workspace_in_every_layer(
        workspace: Path, user_config_home: Path, value: str) -> None:
    """``../home/.bashrc``, ``~/.bashrc`` or an absolute path were silently never used; ``.envrc`` (a shell
    script direnv runs) got a review's rules."""
    _ws_file(workspace, f'instruction_files = ["AGENTS.md", {json.dumps(value)}]\n')
    s, warnings = _load(str(workspace))
    assert s.instructionFiles == ("AGENTS.md",)  # the default: the layer below
    assert _codes(warnings) == ["E_CONFIG_INVALID"] and value in warnings[0] and "instruction_files" in warnings[0]
    trust.trust(str(workspace))  # trust does not make them instruction files
    assert _load(str(workspace))[0].instructionFiles == ("AGENTS.md",)
    assert config.merge(config.Settings(), {"instructionFiles": [value]}, source="editor settings")[1]


@pytest.mark.parametrize("value", ["AGENTS.md", "docs/CLAUDE.md", ".cursor/rules/team.mdc", ".cursorrules",
                                   "./GEMINI.md", "notes/Style.MARKDOWN", ".github/copilot-instructions.md"])
def test_markdown_and_agents_rules_files_are_instruction_files(workspace: Path, value: str) -> None:
    _ws_file(workspace, f'instruction_files = [{json.dumps(value)}]\n')
    assert _load(str(workspace)) == (config.Settings(instructionFiles=(value,)), [])


def test_a_cloned_repositorys_config_cannot_make_a_review_write_a_script_unasked(workspace: Path) -> None:
    """``mode = "auto"`` with ``instruction_files = [".envrc", "../home/.bashrc", …]`` in an untrusted repository's
    own file: ``cairn remember`` appended the rule to ``.envrc`` without asking, the other entries silently
    ignored; and each E_WORKSPACE_UNTRUSTED line was printed twice."""
    (workspace / ".envrc").write_text("export A=1\n")
    (workspace / "AGENTS.md").write_text("# Agents\n")
    _ws_file(workspace, 'mode = "auto"\nprovider = "openai"\n'
             'instruction_files = ["../home/.bashrc", "~/.bashrc", "/abs", ".envrc"]\n')
    r = subprocess.run([PYTHON, "-m", "cairn.server", "remember", "-w", str(workspace), "--json",
                        "Never run make deploy without asking"], cwd=REPO, env=child_env(), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (workspace / ".envrc").read_text() == "export A=1\n"
    out = json.loads(r.stdout)
    assert out["applied"] == [] and all(p["state"] == "pending" for p in out["proposals"])  # asked, not applied
    lines = r.stderr.splitlines()
    assert [ln.split(":")[1].strip() for ln in lines] == ["E_WORKSPACE_UNTRUSTED", "E_CONFIG_INVALID"], r.stderr
    assert 'provider, mode = "auto"' in lines[0] and "../home/.bashrc" in lines[1]


def test_the_users_global_memory_root_stands_against_an_untrusted_file(workspace: Path, user_config_home: Path) -> None:
    (user_config_home / "cairn").mkdir()
    (user_config_home / "cairn/config.toml").write_text('memory_roots = ["/home/u/memory"]\n')
    _ws_file(workspace, 'memory_roots = ["/home/u/memory"]\n')  # the same value: nothing to report
    assert _load(str(workspace)) == (config.Settings(memoryRoots=("/home/u/memory",)), [])
    _ws_file(workspace, 'memory_roots = ["/elsewhere"]\n')
    s, warnings = _load(str(workspace))
    assert s.memoryRoots == ("/home/u/memory",) and _codes(warnings) == ["E_WORKSPACE_UNTRUSTED"]


def test_an_untrusted_file_cannot_choose_which_session_files_are_watched(workspace: Path) -> None:
    """A cloned repository's file naming other folders' sessions would pull them into its journal."""
    _ws_file(workspace, 'watch_paths = ["~/.claude/projects"]\nseal_idle_minutes = 5\n')
    s, warnings = _load(str(workspace))
    assert (s.watchPaths, s.sealIdleMinutes) == ((), 5.0)
    assert _codes(warnings) == ["E_WORKSPACE_UNTRUSTED"] and "watch_paths" in warnings[0]
    trust.trust(str(workspace))
    assert _load(str(workspace))[0].watchPaths == ("~/.claude/projects",)


def test_an_untrusted_file_repeating_the_defaults_is_not_reported(workspace: Path) -> None:
    _ws_file(workspace, 'provider = "extractive"\napi_key_env = "CAIRN_OPENAI_API_KEY"\n')
    assert _load(str(workspace)) == (config.Settings(), [])


def test_editor_settings_are_the_users_and_need_no_trust(workspace: Path) -> None:
    _ws_file(workspace, REMOTE)
    editor = {"provider": "openai", "endpoint": "http://127.0.0.1:8/v1", "apiKeyEnv": "MY_KEY", "model": "mine"}
    s, warnings = _load(str(workspace), editor)
    assert (s.provider, s.endpoint, s.apiKeyEnv) == ("openai", "http://127.0.0.1:8/v1", "MY_KEY")
    assert warnings == []  # the workspace's values would not have mattered
    # an editor naming only the variable does not let the untrusted file choose the endpoint
    s, warnings = _load(str(workspace), {"apiKeyEnv": "MY_KEY"})
    assert (s.provider, s.endpoint, s.apiKeyEnv) == ("extractive", "", "MY_KEY")
    assert _codes(warnings) == ["E_WORKSPACE_UNTRUSTED"] and "api_key_env" not in warnings[0]


def test_precedence_defaults_user_workspace_editor(workspace: Path, user_config_home: Path) -> None:
    _ws_file(workspace, 'idle_minutes = 3\nseal_idle_minutes = 7\n')
    _config_path(user_config_home / "cairn").write_text('mode = "manual"\nidle_minutes = 4\nseal_idle_minutes = 8\n')
    s, warnings = _load(str(workspace), {"sealIdleMinutes": 9})
    assert (s.mode, s.idleMinutes, s.sealIdleMinutes) == ("manual", 3.0, 9.0) and warnings == []


def test_a_users_provider_stands_against_an_untrusted_file_and_yields_to_a_trusted_one(
        workspace: Path, user_config_home: Path) -> None:
    _config_path(user_config_home / "cairn").write_text('provider = "openai"\nendpoint = "http://127.0.0.1:7/v1"\n')
    _ws_file(workspace, 'provider = "extractive"\n')
    s, warnings = _load(str(workspace))
    assert (s.provider, s.endpoint) == ("openai", "http://127.0.0.1:7/v1")
    assert _codes(warnings) == ["E_WORKSPACE_UNTRUSTED"]
    trust.trust(str(workspace))
    s, warnings = _load(str(workspace))
    assert s.provider == "extractive" and warnings == []


def test_each_warning_is_reported_once_per_process() -> None:
    w = [CairnError(ErrorCode.WORKSPACE_UNTRUSTED, f"test {os.getpid()} {id(object())}")]
    assert config.unreported(w + w) == [f"E_WORKSPACE_UNTRUSTED: {w[0].message}"]
    assert config.unreported(w) == []


# -- the trust list -----------------------------------------------------------------


def test_trust_stores_the_real_path_atomically_and_untrust_removes_it(
    workspace: Path, tmp_path: Path, user_config_home: Path
) -> None:
    link = tmp_path / "link"
    link.symlink_to(workspace)
    assert trust.trust(str(link)) == (str(workspace.resolve()), True)
    assert trust.trust(str(workspace)) == (str(workspace.resolve()), False)
    d = user_config_home / "cairn"
    doc = json.loads((d / trust.TRUST_FILE).read_text())
    assert doc == {"version": 1, "workspaces": [str(workspace.resolve())]}
    assert (d / trust.TRUST_FILE).stat().st_mode & 0o777 == 0o600
    assert not [n for n in os.listdir(d) if n.startswith(".tmp-")]  # the temp was renamed into place
    assert trust.is_trusted(str(link)) and trust.is_trusted(str(workspace))
    assert not trust.is_trusted(str(workspace / "sub"))  # trust is per folder, not inherited
    assert trust.untrust(str(link)) == (str(workspace.resolve()), True)
    assert trust.trusted_paths() == [] and not trust.is_trusted(str(workspace))


def test_a_damaged_trust_list_trusts_nothing_and_is_never_overwritten(workspace: Path, user_config_home: Path) -> None:
    _ws_file(workspace, REMOTE)
    (user_config_home / "cairn").mkdir()
    damaged = user_config_home / "cairn" / trust.TRUST_FILE
    damaged.write_text(json.dumps({"version": 1, "workspaces": [str(workspace.resolve())], "extra": 1}))
    s, warnings = _load(str(workspace))
    assert s.provider == "extractive"
    assert _codes(warnings) == ["E_CONFIG_INVALID", "E_WORKSPACE_UNTRUSTED"]
    with pytest.raises(CairnError) as info:
        trust.trust(str(workspace))
    assert info.value.code is ErrorCode.CONFIG_INVALID and "extra" in damaged.read_text()


def test_config_dir_follows_xdg_config_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert trust.config_dir() == str(tmp_path / "cairn")
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")  # not absolute: ignored, as the spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert trust.config_dir() == str(tmp_path / "home/.config/cairn")


# -- config files as control files ---------------------------------------------------

LOAD = "import json, sys; from cairn.worker.settings import config; print(json.dumps([config.line(w) for w in config.load(sys.argv[1])[1]]))"


def _limit_memory() -> None:  # a reader that follows /dev/zero must fail here, not exhaust the machine
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _load_in_child(ws: Path) -> list[str]:
    r = subprocess.run([PYTHON, "-c", LOAD, str(ws)], cwd=REPO, env=child_env(), capture_output=True, text=True,
                       timeout=60, preexec_fn=_limit_memory)
    assert r.returncode == 0, r.stderr[-500:]
    return list(json.loads(r.stdout))


@pytest.mark.parametrize("kind", ["symlink-to-dev-zero", "fifo", "oversized", "directory", "symlinked-dot-cairn"])
def test_a_config_file_that_is_not_a_small_regular_file_is_refused_promptly(
    workspace: Path, tmp_path: Path, kind: str
) -> None:
    path = _config_path(workspace / ".cairn")
    if kind == "symlink-to-dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "oversized":
        path.write_text("# padding\n" * 7000 + 'mode = "manual"\n')  # about 70 KiB, valid TOML
    elif kind == "directory":
        path.mkdir()
    else:
        path.parent.rmdir()
        _config_path(tmp_path / "elsewhere").write_text(REMOTE)
        path.parent.symlink_to(tmp_path / "elsewhere")
    warnings = _load_in_child(workspace)
    assert _codes(warnings) == ["E_CONFIG_INVALID"], warnings
    reason = {"symlink-to-dev-zero": "is a symlink", "fifo": "not a regular file", "oversized": "larger than 64 KiB",
              "directory": "not a regular file", "symlinked-dot-cairn": ".cairn is a symlink or not a directory"}[kind]
    assert reason in warnings[0]


def test_the_user_config_may_be_a_link_but_must_be_a_small_regular_file(
    workspace: Path, user_config_home: Path, tmp_path: Path
) -> None:
    path = _config_path(user_config_home / "cairn")
    dotfiles = tmp_path / "dotfiles.toml"
    dotfiles.write_text('mode = "manual"\n')
    path.symlink_to(dotfiles)  # dotfile managers link the user's own file
    assert _load(str(workspace)) == (config.Settings(mode="manual"), [])
    path.unlink()
    os.mkfifo(path)
    warnings = _load_in_child(workspace)
    assert _codes(warnings) == ["E_CONFIG_INVALID"] and "config.toml (user) is not a regular file" in warnings[0]


def test_a_config_nested_past_the_parsers_stack_is_invalid_not_a_crash(workspace: Path) -> None:
    _ws_file(workspace, "a = " + "[" * 20000 + "]" * 20000 + "\n")
    s, warnings = _load(str(workspace))
    assert s == config.Settings() and _codes(warnings) == ["E_CONFIG_INVALID"]


def test_command_and_context_settings_in_both_spellings(workspace: Path, user_config_home: Path) -> None:
    (user_config_home / "cairn").mkdir()
    (user_config_home / "cairn/config.toml").write_text(
        'provider = "command"\ncommand = ["llm", "-m", "qwen3"]\ncontext_tokens = 4096\ntimeout_seconds = 30\n')
    s, warnings = _load(str(workspace))
    assert (s.provider, s.command, s.contextTokens, s.timeoutSeconds) == ("command", ("llm", "-m", "qwen3"), 4096, 30.0)
    assert warnings == []
    s, warnings = _load(str(workspace), {"command": ["ollama", "run", "m"], "contextTokens": 16384})
    assert (s.command, s.contextTokens) == (("ollama", "run", "m"), 16384) and warnings == []
    s, warnings = _load(str(workspace), {"command": "llm -m qwen3", "contextTokens": "big"})
    assert s.command == ("llm", "-m", "qwen3") and s.contextTokens == 4096  # never split a string, never guess
    assert _codes(warnings) == ["E_CONFIG_INVALID", "E_CONFIG_INVALID"]
    s, warnings = _load(str(workspace), {"command": []})
    assert _codes(warnings) == ["E_CONFIG_INVALID"] and 'provider "command" needs' in warnings[0]


def test_an_untrusted_file_cannot_name_a_command(workspace: Path, user_config_home: Path) -> None:
    _ws_file(workspace, 'provider = "command"\ncommand = ["sh", "-c", "curl evil"]\ncontext_tokens = 4096\n')
    s, warnings = _load(str(workspace))
    assert (s.provider, s.command, s.contextTokens) == ("extractive", (), 4096)
    assert _codes(warnings) == ["E_WORKSPACE_UNTRUSTED"] and "provider, command" in warnings[0]
    # repeating the user's own command is not reported
    (user_config_home / "cairn").mkdir()
    (user_config_home / "cairn/config.toml").write_text('provider = "command"\ncommand = ["sh", "-c", "curl evil"]\n')
    assert _load(str(workspace))[1] == []
    trust.trust(str(workspace))
    (user_config_home / "cairn/config.toml").unlink()
    s, warnings = _load(str(workspace))
    assert (s.provider, s.command) == ("command", ("sh", "-c", "curl evil")) and warnings == []


def test_every_control_file_is_read_by_the_one_pinned_reader(
    workspace: Path, user_config_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trust list and both config files go through ``PinnedDir.read`` (one implementation of its guarantees)."""
    from cairn.state.fsdir import PinnedDir

    _ws_file(workspace, 'mode = "manual"\n')
    _config_path(user_config_home / "cairn").write_text('idle_minutes = 4\n')
    trust.trust(str(workspace))
    reads: list[tuple[str, bool]] = []
    real_read = PinnedDir.read

    def spy(self: PinnedDir, name: str, **kw: Any) -> bytes | None:
        reads.append((name, bool(kw.get("follow"))))
        return real_read(self, name, **kw)

    monkeypatch.setattr(PinnedDir, "read", spy)
    assert trust.trusted_paths() == [str(workspace.resolve())]
    assert reads == [(trust.TRUST_FILE, False)]
    s, warnings = _load(str(workspace))
    assert (s.mode, s.idleMinutes, warnings) == ("manual", 4.0, [])
    assert set(reads) == {(trust.TRUST_FILE, False), ("config.toml", True), ("config.toml", False)}


@pytest.mark.parametrize("kind", ["symlink", "fifo", "oversized", "directory"])
def test_a_trust_list_that_is_not_a_small_regular_file_trusts_nothing(
    workspace: Path, user_config_home: Path, tmp_path: Path, kind: str
) -> None:
    path = user_config_home / "cairn" / trust.TRUST_FILE
    path.parent.mkdir()
    listed = json.dumps({"version": 1, "workspaces": [str(workspace.resolve())]})
    if kind == "symlink":
        (tmp_path / "elsewhere.json").write_text(listed)
        path.symlink_to(tmp_path / "elsewhere.json")
    elif kind == "fifo":
        os.mkfifo(path)  # no writer: a blocking open would hang here
    elif kind == "oversized":
        path.write_text(listed + " " * trust.CONTROL_FILE_LIMIT)
    else:
        path.mkdir()
    with pytest.raises(CairnError) as info:
        trust.trusted_paths()
    assert info.value.code is ErrorCode.CONFIG_INVALID
    reason = {"symlink": "is a symlink; not followed", "fifo": "is not a regular file",
              "oversized": "is larger than 64 KiB", "directory": "is not a regular file"}[kind]
    assert info.value.message == f"{trust.TRUST_FILE} {reason}"
