#!/usr/bin/env bash
# The Docker Space, checked without a container engine: `make space-check` (as root).
#
# Follows the Dockerfile's steps on this machine and drives one race through the app's API:
#   1. the build context: the working tree as the real .dockerignore filters it (Docker's
#      own pattern rules), copied into a clean folder;
#   2. the user the Space runs as, uid 1000 with HOME=/home/user (an existing uid-1000 user
#      is reused; HOME is a temporary folder when /home/user already exists);
#   3. the Dockerfile's COPY steps into its WORKDIR (owners as --chown gives them), then
#      scripts/install.sh as that user, into a fresh venv standing in for the image's system
#      Python, with the Dockerfile's TORCH_BUILD default and the pip configuration root has;
#   4. the CMD with the Dockerfile's ENV, as that user, then one short race through
#      gradio_client (api_name "/race"), which must finish, identical to vanilla;
#   5. what the app wrote as that user: Gradio's example cache beside app.py, and the
#      few-row kernel under ~/.cache/logitspec where this CPU and compiler can build it.
# What it cannot check without a container engine: the base image, the apt-get step (it
# checks that this machine has the packages instead) and the download of torch's CPU wheel
# from PyTorch's index when that index is out of reach (it then comes from pip's own
# configuration, and the check still requires a torch without CUDA).
#
# Prints one line "space-check: PASS ..." or "space-check: FAIL: ..."; exits 1 on failure.
# Stops the server and removes everything it made (folders, a user it created) on exit.
#
# Settings: SPACE_CHECK_TOKENS (16 new tokens), SPACE_CHECK_PORT (the Dockerfile's port, or
# a free one when it is taken), SPACE_CHECK_PYTHON (the base Python for the venv, 3.11),
# SPACE_CHECK_KEEP=1 keeps the work folder for a look afterwards.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOKENS=${SPACE_CHECK_TOKENS:-16}
START_TIMEOUT=600   # seconds for the page to be served (example cache drawing included)
RACE_TIMEOUT=600    # seconds for the race (the model loads in the background meanwhile)
T0=$(date +%s)
RESULT=""
WORK=""
SERVER_PID=""
CHILD=""        # the long step running now, in its own process group
CREATED_USER=""
CREATED_HOME=""

say() { echo "space-check: $*"; }
fail() {
    RESULT="FAIL: $*"
    exit 1
}

stop_group() {  # a process group this script started: TERM, then KILL after 10 s
    [ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 0
    kill -TERM -- "-$1" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-$1" 2>/dev/null || true
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    exec 1>&3 2>&4  # a signal may come while a step's output goes to a log
    stop_group "$CHILD"
    stop_group "$SERVER_PID"
    # anything else still running as the check's user from inside the work folders
    if [ -n "$WORK" ]; then
        for p in $(pgrep -u "${CHECK_UID:-1000}" 2>/dev/null || true); do
            if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -e "$WORK" -e "${HOME_DIR:-$WORK}"; then
                kill -KILL "$p" 2>/dev/null || true
            fi
        done
    fi
    if [ -n "$WORK" ] && [ -f "$WORK/server.log" ] && [ $rc -ne 0 ]; then
        echo "---- last lines of the server's log ----"
        tail -n 40 "$WORK/server.log" || true
        echo "----"
    fi
    if [ -n "$CREATED_HOME" ]; then rm -rf "$CREATED_HOME"; fi
    if [ -n "$WORK" ]; then
        if [ "${SPACE_CHECK_KEEP:-0}" = 1 ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
    fi
    if [ -n "$CREATED_USER" ]; then userdel "$CREATED_USER" 2>/dev/null || true; fi
    local secs=$(( $(date +%s) - T0 ))
    if [ $rc -eq 0 ] && [ -z "$RESULT" ]; then RESULT="PASS"; fi
    if [ -z "$RESULT" ]; then RESULT="FAIL: stopped (exit status $rc)"; fi
    case "$RESULT" in
        PASS*) echo "space-check: $RESULT in ${secs} s"; exit 0 ;;
        *) echo "space-check: $RESULT (after ${secs} s)"; exit 1 ;;
    esac
}
exec 3>&1 4>&2
trap cleanup EXIT
trap 'RESULT="FAIL: interrupted"; exit 130' INT TERM

if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then exec sudo -E "$0" "$@"; fi
    fail "run as root: the check switches to uid 1000"
fi

WORK=$(mktemp -d /tmp/space-check.XXXXXX)
chmod 755 "$WORK"
HELPER="$WORK/helper.py"

cat >"$HELPER" <<'PY'
"""Helpers of scripts/space_check.sh: the build context, the Dockerfile, pip's settings, the race."""
import ast
import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path


# ------------------------------------------------------------------ .dockerignore


def ignore_patterns(path):
    """(regex, exclusion) per line of a .dockerignore, as Docker's pattern matcher reads it."""
    out = []
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        neg = line.startswith("!")
        if neg:
            line = line[1:].strip()
        line = os.path.normpath(line).replace(os.sep, "/")
        if len(line) > 1 and line.startswith("/"):
            line = line[1:]
        out.append((re.compile(pattern_regex(line)), neg))
    return out


def pattern_regex(p):
    """Docker's rules (moby patternmatcher): * and ? stop at /, ** spans folders."""
    r, i = "^", 0
    while i < len(p):
        c = p[i]
        if c == "*":
            if p[i + 1:i + 2] == "*":
                i += 1
                if p[i + 1:i + 2] == "/":
                    i += 1
                r += ".*" if i + 1 >= len(p) else "(.*/)?"
            else:
                r += "[^/]*"
        elif c == "?":
            r += "[^/]"
        elif c == "\\" and i + 1 < len(p):
            i += 1
            r += re.escape(p[i])
        elif c in "[]-^":
            r += c
        else:
            r += re.escape(c)
        i += 1
    return r + "$"


def ignored(rel, patterns):
    """Whether Docker leaves rel out: the last pattern matching it or a folder above it decides."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    out = False
    for rx, neg in patterns:
        if any(rx.match(p) for p in prefixes):
            out = not neg
    return out


def context(root, dest):
    """Copy the build context (the working tree less what .dockerignore leaves out) to dest."""
    root, dest = Path(root), Path(dest)
    patterns = ignore_patterns(root / ".dockerignore")
    can_prune = not any(neg for _, neg in patterns)
    files, size, tops = [], 0, {}
    for d, dirs, names in os.walk(root):
        rd = os.path.relpath(d, root)
        rd = "" if rd == "." else rd + "/"
        keep = []
        for n in sorted(dirs):
            if can_prune and ignored(rd + n, patterns):
                continue
            if os.path.islink(os.path.join(d, n)):
                names.append(n)  # a link is copied as a link
                continue
            keep.append(n)
        dirs[:] = keep
        for n in sorted(names):
            rel = rd + n
            if ignored(rel, patterns):
                continue
            src, dst = root / rel, dest / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_symlink():
                os.symlink(os.readlink(src), dst)
            else:
                shutil.copy2(src, dst)
                size += src.stat().st_size
            files.append(rel)
            top = rel.split("/")[0]
            tops[top] = tops.get(top, 0) + (0 if src.is_symlink() else src.stat().st_size)
    (dest.parent / "context-files.txt").write_text("\n".join(files) + "\n")
    big = ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sorted(tops.items(), key=lambda kv: -kv[1])[:6])
    print(f"build context: {len(files)} files, {size / 1e6:.1f} MB (largest: {big})")


# ------------------------------------------------------------------ Dockerfile


def instructions(path):
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    out, cur = [], ""
    for line in Path(path).read_text().splitlines():
        s = line.strip()
        if not cur and (not s or s.startswith("#")):
            continue
        if cur and s.startswith("#"):
            continue  # a comment inside a continued instruction
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        cur += s
        word, _, rest = cur.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        cur = ""
    return out


def expand(value, env):
    """$VAR and ${VAR} from what the Dockerfile set so far; others stay as they are."""
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), m.group(0)), value)


def dockerfile(path):
    """The Dockerfile as shell assignments for space_check.sh; unknown steps are errors."""
    env, args, copies, runs, errors = {}, {}, [], [], []
    workdir, user, cmd, apt = "/", "root", None, []
    uid = None
    for word, rest in instructions(path):
        if word == "FROM":
            continue
        if word == "ARG":
            k, _, v = rest.partition("=")
            args[k.strip()] = v.strip().strip('"')
        elif word == "ENV":
            toks = shlex.split(rest)
            if toks and "=" not in toks[0]:  # ENV key value
                toks = [toks[0] + "=" + " ".join(toks[1:])]
            for t in toks:
                k, _, v = t.partition("=")
                env[k] = expand(v, {**args, **env})
        elif word == "WORKDIR":
            workdir = os.path.join(workdir, expand(rest, env))
        elif word == "USER":
            user = rest
        elif word == "COPY":
            toks = shlex.split(rest)
            flags = [t for t in toks if t.startswith("--")]
            paths = [t for t in toks if not t.startswith("--")]
            chown = next((f.split("=", 1)[1] for f in flags if f.startswith("--chown=")), "")
            if any(not f.startswith("--chown=") for f in flags):
                errors.append(f"COPY flag the check cannot mirror: {rest}")
            copies.append({"chown": chown, "src": paths[:-1], "dest": os.path.join(workdir, paths[-1]),
                           "dest_is_dir": paths[-1].endswith("/") or paths[-1] in (".", "./")
                           or len(paths) > 2})
        elif word == "RUN":
            if "apt-get" in rest:
                m = re.search(r"apt-get install ([^&;|]*)", rest)
                apt += [t for t in (m.group(1).split() if m else []) if not t.startswith("-")]
            elif "useradd" in rest:
                m = re.search(r"--uid (\d+)", rest)
                uid = int(m.group(1)) if m else None
                name = rest.split("&&")[0].split()[-1]
                if "--create-home" not in rest and "-m" not in rest.split():
                    errors.append("useradd without --create-home: HOME would not exist")
                for mk in re.findall(r"mkdir -p (\S+)", rest):
                    runs.append(("mkdir", mk, name if f"chown {name}" in rest else "root"))
            elif "install.sh" in rest:
                runs.append(("install", rest, workdir))
            else:
                errors.append(f"RUN step the check cannot mirror: {rest}")
        elif word == "CMD":
            cmd = json.loads(rest) if rest.startswith("[") else ["sh", "-c", rest]
        elif word in ("EXPOSE", "LABEL"):
            continue
        else:
            errors.append(f"instruction the check cannot mirror: {word} {rest}")
    q = shlex.quote
    print("DF_ENV=(" + " ".join(q(f"{k}={v}") for k, v in env.items()) + ")")
    print("DF_ARGS=(" + " ".join(q(f"{k}={v}") for k, v in args.items()) + ")")
    print(f"DF_WORKDIR={q(workdir)}")
    print(f"DF_USER={q(user)}")
    print(f"DF_UID={q(str(uid or ''))}")
    print("DF_CMD=(" + " ".join(q(c) for c in (cmd or [])) + ")")
    print("DF_APT=(" + " ".join(q(a) for a in apt) + ")")
    print(f"DF_COPIES={q(json.dumps(copies))}")
    print("DF_RUNS=(" + " ".join(q("\t".join(r)) for r in runs) + ")")
    print("DF_ERRORS=(" + " ".join(q(e) for e in errors) + ")")


def copy(context_dir, copies_json, index, home_from, home_to, owner):
    """One COPY step: from the context into the mapped WORKDIR, owned as --chown says."""
    c = json.loads(copies_json)[int(index)]
    uid, gid = (int(x) for x in owner.split(":"))
    dest = c["dest"].replace(home_from, home_to, 1) if c["dest"].startswith(home_from) else None
    if dest is None:
        sys.exit(f"COPY into {c['dest']}, outside {home_from}: the check maps only that folder")
    ctx = Path(context_dir)
    made = []
    for s in c["src"]:
        src = ctx / s
        if not src.exists():
            sys.exit(f"COPY {s}: not in the build context (.dockerignore leaves it out?)")
        if src.is_dir():
            target = Path(dest)
            shutil.copytree(src, target, symlinks=True, dirs_exist_ok=True)
            made.append(target)
        else:
            target = Path(dest) / src.name if c["dest_is_dir"] else Path(dest)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
            made.append(target)
    if c["chown"]:
        for m in made:
            os.lchown(m, uid, gid)
            if m.is_dir() and not m.is_symlink():
                for d, dirs, names in os.walk(m):
                    for n in dirs + names:
                        os.lchown(os.path.join(d, n), uid, gid)


# ------------------------------------------------------------------ pip


def pipconf(listing, out):
    """pip's file settings as `pip config list` shows them to root, as one config file."""
    sections = {}
    for line in Path(listing).read_text().splitlines():
        key, sep, value = line.partition("=")
        if not sep or key.startswith(":env:"):
            continue  # environment settings travel as environment variables
        section, _, name = key.partition(".")
        sections.setdefault(section, {})[name] = ast.literal_eval(value)
    with open(out, "w") as f:
        for section, items in sections.items():
            f.write(f"[{section}]\n")
            for k, v in items.items():
                f.write(f"{k} = {v}\n")


# ------------------------------------------------------------------ the race


def race(url, tokens):
    """One race through the app's API; exits 0 only if it finished, identical to vanilla."""
    from gradio_client import Client

    prompt = ("Summarize the following text. The city council met on Monday to discuss the new "
              "bridge. The council approved the budget for the bridge, and work on the bridge "
              "starts in May. The bridge will connect the old town with the new harbour.")
    client = Client(url, verbose=False)
    try:
        result = client.predict(prompt=prompt, max_new=int(tokens), api_name="/race")
    except TypeError as e:  # the race's inputs were renamed
        print(f"race inputs: {e}; the API says: {client.view_api(print_info=False, return_format='dict')}")
        return 1
    texts = [r for r in (result if isinstance(result, (list, tuple)) else [result]) if isinstance(r, str)]
    status = next((t for t in texts if "Done:" in t), "")
    counters = next((t for t in texts if "<table class='counters'>" in t), "")
    plain = lambda s: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", s)).strip()
    print(f"race status: {plain(status) or '(none)'}")
    print(f"race counters: {plain(counters)[:400] or '(none)'}")
    ok = (bool(status) and "Stopped" not in status and "racing…" not in counters
          and "identical to vanilla" in counters)
    return 0 if ok else 1


if __name__ == "__main__":
    cmd, *a = sys.argv[1:]
    rc = {"context": context, "dockerfile": dockerfile, "copy": copy, "pipconf": pipconf,
          "race": race}[cmd](*a)
    sys.exit(rc or 0)
PY

HOST_PY=$(command -v python3)

# ---- the Dockerfile, read as the build would run it
PLAN=$("$HOST_PY" "$HELPER" dockerfile "$ROOT/Dockerfile") || fail "could not read the Dockerfile"
eval "$PLAN"
if [ ${#DF_ERRORS[@]} -gt 0 ]; then
    for e in "${DF_ERRORS[@]}"; do say "Dockerfile: $e"; done
    fail "the Dockerfile has steps this check does not mirror (update scripts/space_check.sh)"
fi
[ -n "$DF_UID" ] || fail "the Dockerfile creates no user with --uid"
[ "$DF_USER" != root ] || fail "the Dockerfile's CMD would run as root; Spaces run uid $DF_UID"
[ ${#DF_CMD[@]} -gt 0 ] || fail "the Dockerfile has no CMD"
CHECK_UID=$DF_UID
declare -A ENVD=() ARGD=()
for kv in "${DF_ENV[@]}"; do ENVD[${kv%%=*}]=${kv#*=}; done
for kv in "${DF_ARGS[@]}"; do ARGD[${kv%%=*}]=${kv#*=}; done
IMAGE_HOME=${ENVD[HOME]:-/home/$DF_USER}

# ---- the build context
"$HOST_PY" "$HELPER" context "$ROOT" "$WORK/context" || fail "could not copy the build context"
strays=$(git -C "$ROOT" check-ignore --no-index --stdin <"$WORK/context-files.txt" 2>/dev/null | cut -d/ -f1 | sort -u | tr '\n' ' ' || true)
if [ -n "$strays" ]; then say "note: in the build context though .gitignore ignores them: $strays"; fi

# ---- the apt packages the image installs: this machine must have them
for pkg in "${DF_APT[@]}"; do
    if command -v "$pkg" >/dev/null 2>&1 || dpkg -s "$pkg" >/dev/null 2>&1; then
        say "apt package $pkg: present here (the image installs it)"
    else
        fail "the image installs $pkg with apt-get; this machine lacks it (apt-get install $pkg)"
    fi
done

# ---- the user: uid 1000, HOME as the image sets it (or a temporary stand-in)
if CHECK_USER=$(getent passwd "$DF_UID" | cut -d: -f1) && [ -n "$CHECK_USER" ]; then
    say "user: reusing $CHECK_USER (uid $DF_UID)"
else
    CHECK_USER=$DF_USER
    useradd --no-create-home --uid "$DF_UID" --user-group --shell /usr/sbin/nologin "$CHECK_USER" \
        || fail "could not create a user with uid $DF_UID"
    CREATED_USER=$CHECK_USER
    say "user: created $CHECK_USER (uid $DF_UID), removed again at the end"
fi
CHECK_GID=$(id -g "$CHECK_USER")
if [ ! -e "$IMAGE_HOME" ]; then
    HOME_DIR=$IMAGE_HOME
    CREATED_HOME=$HOME_DIR
else
    HOME_DIR=$WORK/home   # the image's $IMAGE_HOME exists here: a stand-in of the same shape
fi
mkdir -p "$HOME_DIR"
chown "$DF_UID:$CHECK_GID" "$HOME_DIR"
chmod 755 "$HOME_DIR"
map() { local v=$1; [ "${v#"$IMAGE_HOME"}" != "$v" ] && v=$HOME_DIR${v#"$IMAGE_HOME"}; echo "$v"; }
APP=$(map "$DF_WORKDIR")
[ "${APP#"$HOME_DIR"}" != "$APP" ] || fail "WORKDIR $DF_WORKDIR is outside $IMAGE_HOME"
VENV=$HOME_DIR/.space-venv   # stands in for the image's system Python
mkdir -p "$WORK/tmp"
chown "$DF_UID:$CHECK_GID" "$WORK/tmp"
say "HOME=$HOME_DIR, app folder $APP"

# The user's environment: the Dockerfile's ENV with HOME mapped and the venv where the
# image's /usr/local/bin is; root's pip settings (its files merged into one, its PIP_*
# variables); temporary files inside the work folder (a fresh container's /tmp).
BASE_PATH=$VENV/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER_ENV=(LANG=C.UTF-8 TMPDIR="$WORK/tmp" GRADIO_TEMP_DIR="$WORK/tmp/gradio" PIP_CONFIG_FILE="$WORK/pip.conf")
while IFS= read -r kv; do USER_ENV+=("$kv"); done < <(env | grep -E '^PIP_[A-Z_]+=' | grep -v '^PIP_CONFIG_FILE=' || true)
for k in "${!ENVD[@]}"; do
    v=${ENVD[$k]}
    v=${v//\$PATH/$BASE_PATH}
    v=${v//\$\{PATH\}/$BASE_PATH}
    v=${v//$IMAGE_HOME/$HOME_DIR}
    USER_ENV+=("$k=$v")
done
[ -n "${ENVD[PATH]:-}" ] || USER_ENV+=("PATH=$BASE_PATH")
[ -n "${ENVD[HOME]:-}" ] || USER_ENV+=("HOME=$HOME_DIR")
if [ -n "${SPACE_CHECK_PORT:-}" ]; then USER_ENV+=("GRADIO_SERVER_PORT=$SPACE_CHECK_PORT"); fi
PORT=$(for kv in "${USER_ENV[@]}"; do case $kv in GRADIO_SERVER_PORT=*) echo "${kv#*=}";; esac; done | tail -n1)
PORT=${PORT:-7860}
if "$HOST_PY" -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $PORT)) != 0)"; then
    NEW=$("$HOST_PY" -c "import socket; s=socket.socket(); s.bind(('', 0)); print(s.getsockname()[1])")
    say "note: port $PORT is taken on this machine; the app serves on $NEW instead"
    PORT=$NEW
    USER_ENV+=("GRADIO_SERVER_PORT=$PORT")
fi
# Runs "$@" as that user in RUN_IN (default HOME) and waits. Each command gets its own
# process group and the script waits with `wait`, so a signal's cleanup stops it at once.
as_user() {
    (cd "${RUN_IN:-$HOME_DIR}" && exec setsid setpriv --reuid="$DF_UID" --regid="$CHECK_GID" \
        --init-groups -- env -i "${USER_ENV[@]}" "$@") &
    CHILD=$!
    local rc=0
    wait "$CHILD" || rc=$?
    CHILD=""
    return $rc
}

# ---- the Dockerfile's steps
for r in "${DF_RUNS[@]}"; do
    IFS=$'\t' read -r kind what who <<<"$r"
    if [ "$kind" = mkdir ]; then
        d=$(map "$what")
        mkdir -p "$d"
        if [ "$who" != root ]; then chown "$DF_UID:$CHECK_GID" "$d"; fi
    fi
done
[ -d "$APP" ] || mkdir -p "$APP"   # WORKDIR makes it, owned by root

BASE_PY=${SPACE_CHECK_PYTHON:-}
if [ -z "$BASE_PY" ]; then
    for p in /usr/local/bin/python3.11 /usr/bin/python3.11; do
        if [ -x "$p" ] && as_user "$p" -c "import ensurepip, venv" 2>/dev/null; then BASE_PY=$p; break; fi
    done
fi
[ -n "$BASE_PY" ] || fail "no Python 3.11 with venv that uid $DF_UID can run (set SPACE_CHECK_PYTHON)"
as_user "$BASE_PY" -m venv "$VENV" || fail "could not make a venv as $CHECK_USER"

# pip as root sees it, for that user too
"$VENV/bin/pip" config list >"$WORK/pip-root.txt"
"$HOST_PY" "$HELPER" pipconf "$WORK/pip-root.txt" "$WORK/pip.conf"
chmod 644 "$WORK/pip.conf"
as_user "$VENV/bin/pip" config list >"$WORK/pip-user.txt" 2>/dev/null || true
if ! diff <(sort "$WORK/pip-root.txt") <(grep -v -e '^:env:.config-file=' -e '^:env:.no-cache-dir=' "$WORK/pip-user.txt" | sort) >/dev/null; then
    diff <(sort "$WORK/pip-root.txt") <(sort "$WORK/pip-user.txt") || true
    fail "uid $DF_UID does not see root's pip configuration"
fi

# The torch build the Dockerfile picks by default, from PyTorch's CPU index when it can be
# reached; otherwise from pip's own configuration (the check still requires no CUDA).
TORCH_BUILD=${ARGD[TORCH_BUILD]:-}
TORCH_INDEX=https://download.pytorch.org/whl/cpu
if [ "$TORCH_BUILD" = cpu ] && ! "$HOST_PY" -c "import urllib.request; urllib.request.urlopen('$TORCH_INDEX/', timeout=5)" 2>/dev/null; then
    TORCH_INDEX=$(pip config get global.index-url 2>/dev/null || echo https://pypi.org/simple)
    say "note: $TORCH_INDEX stands in for PyTorch's CPU index, which is out of reach here"
fi

step=0
copies=$("$HOST_PY" -c "import json,sys; print(len(json.loads(sys.argv[1])))" "$DF_COPIES")
copy_step() {
    local c
    c=$("$HOST_PY" -c "import json,sys; print(json.loads(sys.argv[1])[int(sys.argv[2])]['chown'])" "$DF_COPIES" "$1")
    "$HOST_PY" "$HELPER" copy "$WORK/context" "$DF_COPIES" "$1" "$IMAGE_HOME" "$HOME_DIR" "$DF_UID:$CHECK_GID" \
        || fail "COPY step $(( $1 + 1 )) failed"
}
# Mirror the order: the COPY steps before the install, the install, then the rest.
installs=0
while IFS= read -r line; do
    case "$line" in
        COPY*) copy_step "$step"; step=$((step + 1)) ;;
        RUN*install.sh*)
            installs=$((installs + 1))
            say "installing with scripts/install.sh as $CHECK_USER (TORCH_BUILD=${TORCH_BUILD:-unset}) ..."
            t=$(date +%s)
            RUN_IN=$APP as_user env TORCH_BUILD="$TORCH_BUILD" TORCH_CPU_INDEX="$TORCH_INDEX" \
                sh install.sh "$VENV/bin/pip" >"$WORK/install.log" 2>&1 \
                || { tail -n 30 "$WORK/install.log"; fail "scripts/install.sh failed as uid $DF_UID"; }
            say "installed in $(( $(date +%s) - t )) s"
            ;;
    esac
done < <(grep -E '^(COPY|RUN)[[:space:]]' "$ROOT/Dockerfile")
[ "$step" = "$copies" ] || fail "mirrored $step of $copies COPY steps"
[ "$installs" = 1 ] || fail "the Dockerfile runs install.sh $installs times; expected once"

RUN_IN=$APP as_user python -c "
import importlib.metadata as md, sys, torch
cuda = sorted(d.metadata['Name'] for d in md.distributions() if d.metadata['Name'].lower().startswith('nvidia-'))
print(f'torch {torch.__version__} (CUDA {torch.version.cuda}); CUDA packages: {len(cuda)}')
sys.exit(1 if '$TORCH_BUILD' == 'cpu' and (torch.version.cuda or cuda) else 0)
" || fail "TORCH_BUILD=cpu installed a torch with CUDA"

foreign=$(find "$APP" ! -uid "$DF_UID" -printf '%P\n' | head -n 5)
if [ -n "$foreign" ]; then say "note: not owned by uid $DF_UID in the app folder: $foreign"; fi

# ---- CMD as the user, then one race
say "starting ${DF_CMD[*]} as $CHECK_USER on port $PORT ..."
cd "$APP"
setsid setpriv --reuid="$DF_UID" --regid="$CHECK_GID" --init-groups -- \
    env -i "${USER_ENV[@]}" "${DF_CMD[@]}" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
cd /
URL=http://127.0.0.1:$PORT/
t=$(date +%s)
until "$HOST_PY" -c "import urllib.request; urllib.request.urlopen('$URL', timeout=2)" 2>/dev/null; do
    kill -0 "$SERVER_PID" 2>/dev/null || fail "the app exited before serving (see its log above)"
    [ $(( $(date +%s) - t )) -lt $START_TIMEOUT ] || fail "the app served no page within $START_TIMEOUT s"
    sleep 1
done
say "page served $(( $(date +%s) - t )) s after the start"

t=$(date +%s)
RUN_IN=$WORK/tmp as_user timeout "$RACE_TIMEOUT" python "$HELPER" race "$URL" "$TOKENS" \
    || fail "the race did not finish as a finished race ($TOKENS tokens)"
say "race of $TOKENS tokens finished $(( $(date +%s) - t )) s after the page"

# ---- what the app wrote as that user
cache=$(find "$APP/.gradio" -mindepth 1 -print -quit 2>/dev/null || true)
[ -n "$cache" ] || fail "no example cache under $APP/.gradio"
say "example cache written beside app.py ($(du -sh "$APP/.gradio" | cut -f1))"
KERNEL_WHY=$(RUN_IN=$APP as_user python -c "from logitspec.runtime.fewrows import unsupported_reason as u; print(u() or '')")
if [ -z "$KERNEL_WHY" ]; then
    so=$(find "$HOME_DIR/.cache/logitspec" -name '*.so' -print -quit 2>/dev/null || true)
    [ -n "$so" ] || fail "the few-row kernel can be built here but was not built under ~/.cache/logitspec"
    say "few-row kernel built as $CHECK_USER: ${so#"$HOME_DIR/"}"
else
    say "note: the few-row kernel is not built on this machine ($KERNEL_WHY)"
fi
if grep -qE 'PermissionError|Permission denied|Read-only file system' "$WORK/server.log"; then
    grep -E 'PermissionError|Permission denied|Read-only file system' "$WORK/server.log" | head -n 5
    fail "the app hit a permission error as uid $DF_UID"
fi
RESULT="PASS: the Space's steps as uid $DF_UID, then a $TOKENS-token race through /race"
