#!/bin/sh
# mkman.sh DOC.md OUT - a man page from its docs/ page, so the two are one
# text.  The page's first line is "# NAME(SECTION)"; its "## " headings
# become the man page's sections (.SH), "### " subsections (.SS), and its
# tables definition lists (man-tables.lua).
set -eu
doc=$1 out=$2
first=$(head -n 1 "$doc")
name=$(printf '%s' "$first" | sed -n 's/^# \([^ (]*\)(\([1-8]\))$/\1/p')
section=$(printf '%s' "$first" | sed -n 's/^# \([^ (]*\)(\([1-8]\))$/\2/p')
if [ -z "$name" ] || [ -z "$section" ]; then
	echo "mkman: $doc: the first line must be \"# NAME(SECTION)\", not \"$first\"" >&2
	exit 1
fi
top=$(dirname "$0")/..
version=$(cat "$top/VERSION")
# No date: the page is the same whenever and wherever it is built.
tail -n +2 "$doc" |
	pandoc --standalone --from markdown --to man --shift-heading-level-by=-1 \
	       --lua-filter "$top/scripts/man-tables.lua" \
	       --metadata title="$(echo "$name" | tr a-z A-Z)" --metadata section="$section" \
	       --metadata header="libception manual" --metadata footer="libception $version" \
	       --metadata date="" --variable adjusting=l --metadata hyphenate=false \
	       --output "$out.tmp"
mv "$out.tmp" "$out"
