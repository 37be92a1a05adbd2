#!/bin/sh
# make breaking: `buf breaking` of proto/ against the protos where this branch left main (their merge-base; on main
# itself, HEAD: so uncommitted edits are checked), offline, from the repository's own git history.
# Against the merge-base rather than main's tip: a field main added since would otherwise read as one this branch removed.
# Skipped with one line (exit 0) where there is nothing to compare with: no git, no commit, no main branch.
# BREAKING=off accepts a breaking change deliberately, for one run (docs/consumers.md).
set -eu
base_branch="${BREAKING_BASE:-main}"

if [ "${BREAKING:-on}" = "off" ]; then
  echo "make breaking: off (BREAKING=off): breaking proto changes accepted for this run"
  exit 0
fi
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1 || ! git rev-parse --verify -q HEAD >/dev/null; then
  echo "make breaking: skipped, no git history to compare proto/ with yet"
  exit 0
fi
if ! git rev-parse --verify -q "refs/heads/$base_branch" >/dev/null; then
  echo "make breaking: skipped, no $base_branch branch to compare proto/ with yet (BREAKING_BASE names another)"
  exit 0
fi
base=$(git merge-base HEAD "refs/heads/$base_branch")
prefix=$(git rev-parse --show-prefix)

# The base's files, extracted from git (no network, nothing of the work tree touched).
against=$(mktemp -d)
trap 'rm -rf "$against"' EXIT INT TERM
git -C "$(git rev-parse --show-toplevel)" archive --format=tar "$base:$prefix" | tar -x -C "$against"
# Third-party protos (google/api, buf/validate…) may be gathered rather than committed: the base gets today's copies.
for dir in proto/google proto/buf proto/grpc; do
  if [ -d "$dir" ] && [ ! -d "$against/$dir" ]; then mkdir -p "$against/proto" && cp -R "$dir" "$against/proto/"; fi
done
if [ ! -f "$against/buf.yaml" ]; then
  echo "make breaking: skipped, $base_branch ($(git rev-parse --short "$base")) has no buf.yaml here yet"
  exit 0
fi
npx --no-install buf breaking --against "$against"
echo "make breaking: no breaking change against $base_branch ($(git rev-parse --short "$base"))"
