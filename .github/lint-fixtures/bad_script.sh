#!/usr/bin/env bash
# A planted defect for .ci/run's shellcheck step, which must reject this
# file: the command substitution is split into words unquoted (SC2046).
rm -f $(ls /nonexistent)
