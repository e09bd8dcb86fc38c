#!/bin/sh
# Prints the C example between the README's example markers, so the README's code is the code
# that `make run` and the tests compile.
sed -n '/<!-- example:begin -->/,/<!-- example:end -->/p' "$1" | sed -e '1,2d' -e '$d' | sed '$d'
