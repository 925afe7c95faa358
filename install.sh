#!/bin/sh
# Installs opencode-restore for this user with nothing but Python 3.11+ (no pipx, no root):
# its own virtual environment in ${XDG_DATA_HOME:-~/.local/share}/opencode-restore-venv, so
# PEP 668 ("externally-managed-environment", Debian/Ubuntu's system Python) never applies,
# and the command linked as ~/.local/bin/opencode-restore. Run it again to upgrade. (Not
# inside ~/.local/share/opencode-restore: that is the data folder, journals and store.)
#
#   ./install.sh [WHAT]    WHAT: what pip installs (default: the checkout holding this file)
#
# PYTHON names the interpreter (default: python3). Without Debian/Ubuntu's python3-venv
# package (no ensurepip) the environment is made without pip and pip is fetched from PyPI.
set -eu

python=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
what=${1:-$here}
venv=${XDG_DATA_HOME:-$HOME/.local/share}/opencode-restore-venv
bin=$HOME/.local/bin

say() { printf 'install.sh: %s\n' "$*" >&2; }
die() {
    say "$*"
    exit 1
}

command -v "$python" >/dev/null 2>&1 ||
    die "no $python on PATH: install Python 3.11 or newer, or name one with PYTHON=..."
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    die "$("$python" -V 2>&1) is too old: opencode-restore needs 3.11 or newer (PYTHON=...)"

# An environment from an earlier run is reused (pip reinstalls the package over it), unless
# it lost its pip or its interpreter (a Python upgrade): then it is made again.
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    if ! "$python" -m venv --clear "$venv" >/dev/null 2>&1; then
        say "no ensurepip here (Debian/Ubuntu: the python3-venv package); fetching pip from PyPI"
        "$python" -m venv --clear --without-pip "$venv"
        wheel=$("$venv/bin/python" - "$venv" <<'EOF'
import hashlib, json, os, sys, urllib.parse, urllib.request

# The newest pip wheel, checked against the digest PyPI publishes for it (a mirror may
# give its address relative to the JSON's).
index = "https://pypi.org/pypi/pip/json"
with urllib.request.urlopen(index, timeout=60) as reply:
    release = json.load(reply)
url = next(u for u in release["urls"] if u["packagetype"] == "bdist_wheel")
with urllib.request.urlopen(urllib.parse.urljoin(index, url["url"]), timeout=300) as reply:
    data = reply.read()
if hashlib.sha256(data).hexdigest() != url["digests"]["sha256"]:
    sys.exit(f"install.sh: {url['filename']}: not the file PyPI lists (sha256 differs)")
path = os.path.join(sys.argv[1], url["filename"])
with open(path, "wb") as out:
    out.write(data)
print(path)
EOF
        )
        # A pip wheel runs as it is: pip installs itself from it.
        "$venv/bin/python" "$wheel/pip" install --quiet "$wheel"
        rm -f "$wheel"
    fi
fi

say "installing $what into $venv (a minute or two)"
"$venv/bin/python" -m pip install --quiet "$what"
mkdir -p "$bin"
ln -sf "$venv/bin/opencode-restore" "$bin/opencode-restore"
say "installed $("$bin/opencode-restore" --version) as $bin/opencode-restore"
case ":$PATH:" in
*":$bin:"*) ;;
*) say "$bin is not on PATH: add  export PATH=\"\$HOME/.local/bin:\$PATH\"  to ~/.profile" \
    "(or ~/.bashrc, ~/.zshrc) and open a new shell; until then run $bin/opencode-restore" ;;
esac
