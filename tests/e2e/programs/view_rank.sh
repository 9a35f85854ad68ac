#!/usr/bin/env bash
# view_rank.sh TOKEN SECONDS [MODES]: one rank of the job-view tests. SECONDS may be @FILE:
# until FILE exists (the test ends the job when it has seen what it waits for, however slow
# the machine). MODES gives each rank's part by its RANK, one letter each (default: all "b"):
#   b  busy: spins for SECONDS, printing a line every second
#   i  idle: sleeps for SECONDS, printing nothing
#   s  stopped: prints "stopping", stops itself (SIGSTOP), then spins for 2 s once continued
#   f  fails: exits 3 in the job's first attempt (TORCHELASTIC_RESTART_COUNT 0), busy after
# TOKEN only marks the processes (pgrep -f).
tok=$1 secs=$2 modes=${3:-bbbbbbbbbbbbbbbb}
mode=${modes:$RANK:1}
# over SECONDS|@FILE END: whether the time is up (END: when it started, plus SECONDS).
over() {
  if [[ $1 == @* ]]; then [ -e "${1#@}" ]; else ((SECONDS >= $2)); fi
}
spin() {
  local end=$SECONDS next=$SECONDS
  [[ $1 == @* ]] || end=$((SECONDS + $1))
  until over "$1" "$end"; do
    if ((SECONDS >= next)); then
      echo "rank $RANK busy $tok"
      next=$((SECONDS + 1))
    fi
  done
}
case $mode in
  f)
    if [ "${TORCHELASTIC_RESTART_COUNT:-0}" = 0 ]; then echo "failing $tok"; exit 3; fi
    spin "$secs"
    ;;
  i)
    if [[ $secs == @* ]]; then
      until over "$secs" 0; do sleep 1; done  # a fork a second: near 0% CPU
    else
      sleep "$secs"
    fi
    ;;
  s) echo "stopping $tok"; kill -STOP $$; spin 2 ;;
  *) spin "$secs" ;;
esac
echo "rank $RANK done"
