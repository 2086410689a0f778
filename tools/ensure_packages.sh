#!/usr/bin/env bash
# Installs, with apt-get (as root, or through sudo), whichever of the Debian packages named as
# arguments are not installed yet. When all of them are, this costs one dpkg-query call each.
# ./bazelw and tools/check_thread_safety.sh call it, so that each works on a fresh Debian 12
# machine whichever runs first.
set -euo pipefail

missing=()
for p in "$@"; do
  dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -q '^installed$' || missing+=("$p")
done
((${#missing[@]})) || exit 0

echo "ensure_packages: installing ${missing[*]}" >&2
sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
# Another apt-get (a second build started at once, the machine's own updates) holds dpkg's lock
# for a while: wait for it rather than fail.
apt=("${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600)
if ! "${apt[@]}" install -y -q "${missing[@]}" >&2; then
  "${apt[@]}" update -q >&2
  "${apt[@]}" install -y -q "${missing[@]}" >&2
fi
