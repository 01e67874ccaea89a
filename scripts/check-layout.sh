#!/usr/bin/env bash
# Checks the floor plan that docs/DESIGN.md ("Layout") describes:
#  1. a package under internal/ imports no Herald package outside internal/
#     except migrations (internal/ holds leaves);
#  2. only programs read configuration: no package outside cmd/ that is not
#     package main calls flag.* or os.Getenv / os.LookupEnv, except the
#     test-database helper (internal/pgtest). Test files are not checked:
#     their knobs (HERALD_UPDATE_SCREENSHOTS) configure the test, not Herald.
set -euo pipefail
cd "$(dirname "$0")/.."

module=$(go list -m)
status=0

while read -r pkg imports; do
	for imp in $imports; do
		case "$imp" in
		"$module"/internal/* | "$module"/migrations) ;;
		"$module" | "$module"/*)
			echo "layout: $pkg imports $imp; a package under internal/ may import only internal/ packages and migrations"
			status=1
			;;
		esac
	done
done < <(go list -f '{{.ImportPath}} {{join .Imports " "}}' "./internal/...")

while read -r pkg name dir files; do
	[ "$name" = main ] && continue
	case "$pkg" in
	"$module"/cmd/* | "$module"/internal/pgtest) continue ;;
	esac
	for f in $files; do
		if hits=$(grep -nE '\bflag\.|os\.(Getenv|LookupEnv)\(' "$dir/$f"); then
			while IFS= read -r hit; do
				echo "layout: ${dir#"$PWD"/}/$f:$hit: configuration is read in cmd/ only; take a Config field instead"
			done <<<"$hits"
			status=1
		fi
	done
done < <(go list -f '{{.ImportPath}} {{.Name}} {{.Dir}} {{join .GoFiles " "}}' ./...)

exit $status
