#!/usr/bin/env bash
# Copy the browser builds of our front-end libraries into static/vendor/.
#
# The packages and their exact versions are in package.json / package-lock.json;
# they come from the npm registry through `npm ci` (never from a CDN URL).
# static/vendor/ is committed, so a checkout needs neither node nor npm.
#
#   scripts/vendor.sh              npm ci, then re-copy everything
#   scripts/vendor.sh --if-needed  only when static/vendor is missing or was made
#                                  from another package-lock.json (make vendor)
#   scripts/vendor.sh --check      no npm: exit 1 unless static/vendor matches
#                                  package-lock.json and its SHA256SUMS (make test)
#
# To upgrade a library: edit its exact version in package.json, run
# `npm install --package-lock-only --ignore-scripts`, then this script.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=static/vendor
lock_sha=$(sha256sum package-lock.json | cut -d' ' -f1)
recorded_sha() { sed -n 's/^# package-lock.json sha256: //p' "$OUT/VERSIONS.txt" 2>/dev/null || true; }

check() {
  if [[ ! -f $OUT/VERSIONS.txt || ! -f $OUT/SHA256SUMS ]]; then
    echo "vendor: $OUT is missing; run scripts/vendor.sh" >&2
    return 1
  fi
  if [[ $(recorded_sha) != "$lock_sha" ]]; then
    echo "vendor: $OUT was not made from this package-lock.json; run scripts/vendor.sh" >&2
    return 1
  fi
  if ! (cd "$OUT" && sha256sum --quiet --strict -c SHA256SUMS); then
    echo "vendor: files in $OUT differ from SHA256SUMS; run scripts/vendor.sh" >&2
    return 1
  fi
  local listed actual
  listed=$(cd "$OUT" && sed 's/^[0-9a-f]*  //' SHA256SUMS | sort)
  actual=$(cd "$OUT" && find . -type f ! -name SHA256SUMS | sed 's|^\./||' | sort)
  if [[ $listed != "$actual" ]]; then
    echo "vendor: unlisted or missing files in $OUT:" >&2
    diff <(echo "$listed") <(echo "$actual") >&2 || true
    return 1
  fi
}

case ${1:-} in
--check)
  check
  exit
  ;;
--if-needed)
  if check 2>/dev/null; then
    exit 0
  fi
  ;;
"") ;;
*)
  echo "usage: $0 [--check|--if-needed]" >&2
  exit 2
  ;;
esac

if ! command -v npm >/dev/null; then
  echo "vendor: npm is needed to (re)build $OUT (apt-get install npm)" >&2
  exit 1
fi

echo "vendor: npm ci"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
NM=node_modules

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vendor.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

put() { # put SRC DEST-RELATIVE-TO-OUT
  mkdir -p "$tmp/$(dirname "$2")"
  cp "$1" "$tmp/$2"
}

version() { node -p "require('./$NM/$1/package.json').version"; }
field() { node -p "require('./package-lock.json').packages['node_modules/$1'].$2"; }

# htmx: UMD-style script, defines the global `htmx`.
put $NM/htmx.org/dist/htmx.min.js htmx/htmx.min.js
put $NM/htmx.org/LICENSE htmx/LICENSE

# markdown-it: UMD, global `markdownit`. The bundle includes its dependencies.
put $NM/markdown-it/dist/markdown-it.min.js markdown-it/markdown-it.min.js
put $NM/markdown-it/LICENSE markdown-it/LICENSE
put $NM/linkify-it/LICENSE markdown-it/LICENSE.linkify-it
put $NM/mdurl/LICENSE markdown-it/LICENSE.mdurl
put $NM/uc.micro/LICENSE.txt markdown-it/LICENSE.uc.micro
put $NM/punycode.js/LICENSE-MIT.txt markdown-it/LICENSE.punycode.js
put $NM/entities/LICENSE markdown-it/LICENSE.entities

# DOMPurify: UMD, global `DOMPurify`.
put $NM/dompurify/dist/purify.min.js dompurify/purify.min.js
put $NM/dompurify/LICENSE dompurify/LICENSE

# highlight.js: the prebuilt "common languages" bundle, global `hljs`.
HL=$NM/@highlightjs/cdn-assets
put $HL/highlight.min.js highlight.js/highlight.min.js
put $HL/styles/github.min.css highlight.js/styles/github.min.css
put $HL/styles/github-dark.min.css highlight.js/styles/github-dark.min.css
put $HL/LICENSE highlight.js/LICENSE

# KaTeX: UMD, global `katex`; auto-render adds `renderMathInElement`.
put $NM/katex/dist/katex.min.js katex/katex.min.js
put $NM/katex/dist/contrib/auto-render.min.js katex/contrib/auto-render.min.js
put $NM/katex/dist/katex.min.css katex/katex.min.css
put $NM/katex/LICENSE katex/LICENSE
for f in $NM/katex/dist/fonts/*.woff2; do
  put "$f" "katex/fonts/$(basename "$f")"
done
# woff2 only (every browser with ES modules reads it): drop the woff/ttf
# fallbacks from the CSS, so ManifestStaticFilesStorage finds every url().
sed -i -E 's/,url\(fonts\/[^)]*\.woff\) format\("woff"\)//g; s/,url\(fonts\/[^)]*\.ttf\) format\("truetype"\)//g' \
  "$tmp/katex/katex.min.css"
if grep -qE 'url\(fonts/[^)]*\.(woff|ttf)\)' "$tmp/katex/katex.min.css"; then
  echo "vendor: katex.min.css still references woff/ttf fonts" >&2
  exit 1
fi
for font in $(grep -oE 'url\(fonts/[^)]*\)' "$tmp/katex/katex.min.css" | sed -E 's/url\((.*)\)/\1/' | sort -u); do
  [[ -f $tmp/katex/$font ]] || { echo "vendor: katex.min.css needs missing $font" >&2; exit 1; }
done

# axe-core: UMD, global `axe`. Only the accessibility tests use it
# (tests/browser/axe.py injects it into the page under test); no page loads it.
put $NM/axe-core/axe.min.js axe-core/axe.min.js
put $NM/axe-core/LICENSE axe-core/LICENSE
put $NM/axe-core/LICENSE-3RD-PARTY.txt axe-core/LICENSE-3RD-PARTY.txt

# No source maps are shipped: drop the comments pointing at them (collectstatic's
# manifest storage would fail on the missing .map files).
find "$tmp" -type f -name '*.js' -exec sed -i -E '/^\/\/# sourceMappingURL=/d' {} +
find "$tmp" -type f -name '*.css' -exec sed -i -E 's#/\*\# sourceMappingURL=[^*]*\*/##' {} +
if grep -rl 'sourceMappingURL=' "$tmp"; then
  echo "vendor: a sourceMappingURL comment is left in the files above" >&2
  exit 1
fi

{
  echo "# Front-end libraries in static/vendor/, copied by scripts/vendor.sh from the"
  echo "# npm registry (npm ci, package-lock.json). Do not edit by hand; see the script."
  echo "# Changes: source-map comments removed; KaTeX CSS reduced to woff2 fonts."
  echo "# package-lock.json sha256: $lock_sha"
  echo "#"
  printf '# name\tversion\tdir\tbuild\tlicense\tintegrity (of the npm tarball)\n'
  for spec in \
    "htmx.org htmx UMD:global=htmx" \
    "markdown-it markdown-it UMD:global=markdownit" \
    "dompurify dompurify UMD:global=DOMPurify" \
    "@highlightjs/cdn-assets highlight.js IIFE:global=hljs(common-languages)" \
    "katex katex UMD:global=katex" \
    "axe-core axe-core UMD:global=axe(tests-only)"; do
    read -r name dir build <<<"$spec"
    printf '%s\t%s\t%s/\t%s\t%s\t%s\n' "$name" "$(version "$name")" "$dir" "$build" \
      "$(field "$name" license)" "$(field "$name" integrity)"
  done
} >"$tmp/VERSIONS.txt"

(cd "$tmp" && find . -type f | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)

rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
cp -r "$tmp" "$OUT"
chmod -R u=rwX,go=rX "$OUT"
check
echo "vendor: $OUT updated ($(du -sh "$OUT" | cut -f1))"
