#!/usr/bin/env bash
# Raw pointers in Swift (Unsafe*, OpaquePointer, withUnsafe…, Unmanaged, unsafeBitCast) are
# allowed only in the files listed in scripts/unsafe-allowed.txt: the types that own a
# libevent, OpenSSL, libcurl, hiredis or nghttp2 object, and the engine's buffer and I/O
# code. A new use elsewhere fails this check, so it is a choice made in review (add the file
# to the list, or wrap the pointer in its owner), not an accident. A listed file that no
# longer needs pointers fails too, so the list only shrinks on purpose.
# Usage: scripts/check-unsafe.sh   (run by scripts/test.sh's format phase)
set -euo pipefail
cd "$(dirname "$0")/.."
pattern='Unsafe[A-Za-z]*|OpaquePointer|withUnsafe|unsafeBitCast|Unmanaged<'
allowed=$(grep -v '^#' scripts/unsafe-allowed.txt | sed '/^$/d' | sort)
using=$(grep -rlE "$pattern" Sources --include='*.swift' | sort)
new=$(comm -13 <(echo "$allowed") <(echo "$using"))
gone=$(comm -23 <(echo "$allowed") <(echo "$using"))
status=0
if [[ -n "$new" ]]; then
  echo "FAIL - raw pointers in files not in scripts/unsafe-allowed.txt (wrap them in their owner, or list the file):"
  while read -r f; do echo "   $f: $(grep -nE "$pattern" "$f" | head -n 1)"; done <<< "$new"
  status=1
fi
if [[ -n "$gone" ]]; then
  echo "FAIL - listed in scripts/unsafe-allowed.txt but no longer using raw pointers (take them off the list):"
  sed 's/^/   /' <<< "$gone"
  status=1
fi
(( status == 0 )) && echo "ok - raw pointers only in the $(wc -l <<< "$allowed") files of scripts/unsafe-allowed.txt"
exit $status
