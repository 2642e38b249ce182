#!/bin/sh
# A C compiler that logs each compilation (not version queries) to $TG_CC_LOG, then runs the real one.
case " $* " in *" --version "*) ;; *) echo "$*" >> "$TG_CC_LOG" ;; esac
exec "${TG_REAL_CC:-cc}" "$@"
