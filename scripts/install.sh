#!/usr/bin/env bash
# Installs cross-agent for this user, downloading nothing: copies a built binary into
# ~/.local/bin, then shows what `cross-agent install` would change (a dry run: nothing is
# written until you run it without --dry-run).
#
# The binary: $CROSS_AGENT_BIN, else the first built one in this checkout (the static musl
# release build CI makes, a release build, a debug build). Build one with
#   cargo build --release -p cross-agent
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

bin=${CROSS_AGENT_BIN:-}
if [[ -z "$bin" ]]; then
  for candidate in \
    "$root/target/x86_64-unknown-linux-musl/release/cross-agent" \
    "$root/target/release/cross-agent" \
    "$root/target/debug/cross-agent"; do
    if [[ -x "$candidate" ]]; then
      bin=$candidate
      break
    fi
  done
fi
if [[ -z "$bin" || ! -x "$bin" ]]; then
  echo "install.sh: no built cross-agent found; build it first (cargo build --release -p cross-agent) or set CROSS_AGENT_BIN" >&2
  exit 1
fi

dest="${HOME:?HOME is not set}/.local/bin"
mkdir -p "$dest"
# Copy beside the old one, then rename: a running daemon keeps its binary, nothing is half-written.
cp "$bin" "$dest/.cross-agent.new"
chmod 0755 "$dest/.cross-agent.new"
mv -f "$dest/.cross-agent.new" "$dest/cross-agent"
echo "copied $bin to $dest/cross-agent"
case ":$PATH:" in
  *":$dest:"*) ;;
  *) echo "note: $dest is not on your PATH; add it in your shell profile" ;;
esac

echo "what \`cross-agent install\` would change (nothing is written yet):"
"$dest/cross-agent" install --dry-run
echo "to apply it: $dest/cross-agent install   (add --panels, --hooks or --unattended; see --help)"
