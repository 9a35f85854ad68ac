#!/usr/bin/env bash
# completion.sh BUILD_DIR: the bash and zsh completions, as a user meets them: a real
# interactive bash and zsh in a terminal (tmux), a line typed, Tab pressed, the screen read.
# - options, and values from --help's lists (--tag-style=op: openmpi) and from the
#   completion's own (--bind-to hw: hwthread);
# - host names from the --ssh-config file's Host lines and from the --hostfile named on the
#   line, in -H's comma list (alpha:2,be: alpha:2,beta);
# - once the command started, ferryrun's options are not offered; after an MPMD ':' they are;
# - ferry's commands and the ids of the user's jobs (a detached job on this machine).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
command -v tmux >/dev/null || { echo "SKIP: tmux is not installed" >&2; exit 77; }
command -v zsh >/dev/null || { echo "SKIP: zsh is not installed" >&2; exit 77; }
T=$(mktemp -d)
sock=ferry-completion-$$
export XDG_STATE_HOME=$T/state PATH=$build/bin:$PATH
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  [[ -n ${id:-} ]] && ferry stop "$id" >/dev/null 2>&1
  rm -rf "$T"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

printf 'Host alpha beta\n  Port 2222\nHost *.example gamma\n' >"$T/ssh_config"
printf '# hosts\nn1 slots=2\nroot@n2:4\n' >"$T/hosts"
mkdir -p "$T/zsh" "$T/work"
cp "$build/share/completion/ferry.zsh" "$T/zsh/_ferry"
cat >"$T/bashrc" <<EOF
PS1='\$ '
source $build/share/completion/ferry.bash
bind 'set show-all-if-ambiguous on'
bind 'set bell-style none'
cd $T/work
EOF
cat >"$T/.zshrc" <<EOF
PS1='$ '
fpath=($T/zsh \$fpath)
autoload -U compinit && compinit -u -d $T/zcompdump
unsetopt beep
cd $T/work
EOF

# A detached job on this machine, for the job ids.
id=$(ferryrun --detach -np 1 sleep 60)
[[ $id =~ ^[0-9a-f]+$ ]] || { echo "FAIL: no detached job: '$id'" >&2; exit 1; }

tm() { tmux -L "$sock" "$@"; }
start() {  # start NAME COMMAND...: a terminal of its own (a tmux server per shell)
  tm kill-server 2>/dev/null || true
  sock=ferry-completion-$$-$1
  shift
  tm new-session -d -s c -x 200 -y 40 "$@"
  sleep 0.5
}
# check WHAT TYPED EXPECT [TABS]: types TYPED, presses Tab (TABS times, default 1), and waits
# until the screen holds EXPECT (a grep -E pattern).
check() {
  local what=$1 typed=$2 expect=$3 tabs=${4:-1} i screen=""
  tm send-keys -t c C-u
  tm send-keys -t c -l "$typed"
  for ((i = 0; i < tabs; i++)); do
    sleep 0.3
    tm send-keys -t c Tab
  done
  for ((i = 0; i < 30; i++)); do
    sleep 0.1
    screen=$(tm capture-pane -p -t c)
    grep -Eq -- "$expect" <<<"$screen" && break
  done
  grep -Eq -- "$expect" <<<"$screen" || fail "$what: typed '$typed', no /$expect/ on the screen:
$(grep -v '^$' <<<"$screen" | tail -5)"
  tm send-keys -t c C-c
  sleep 0.2
  tm send-keys -t c C-l
  sleep 0.2
}
# check_not WHAT TYPED UNWANTED: after Tab Tab, the line is as typed and UNWANTED is not shown.
check_not() {
  local what=$1 typed=$2 unwanted=$3 screen
  tm send-keys -t c C-u
  tm send-keys -t c -l "$typed"
  sleep 0.3
  tm send-keys -t c Tab
  sleep 0.3
  tm send-keys -t c Tab
  sleep 1
  screen=$(tm capture-pane -p -t c)
  ! grep -Eq -- "$unwanted" <<<"$screen" || fail "$what: typed '$typed', /$unwanted/ shown:
$(grep -v '^$' <<<"$screen" | tail -5)"
  tm send-keys -t c C-c
  sleep 0.2
  tm send-keys -t c C-l
  sleep 0.2
}

cfg=$T/ssh_config hf=$T/hosts
start bash bash --noprofile --rcfile "$T/bashrc" -i
check "bash: an option" "ferryrun --ship-f" '^\$ ferryrun --ship-ferryd *$'
check "bash: a listed value after =" "ferryrun --tag-style=op" '^\$ ferryrun --tag-style=openmpi *$'
check "bash: a listed value" "ferryrun --launcher sl" '^\$ ferryrun --launcher slurm *$'
check "bash: a value from the completion's table" "ferryrun -np 2 --bind-to hw" \
  '^\$ ferryrun -np 2 --bind-to hwthread *$'
check "bash: a host from ssh_config in -H's list" "ferryrun --ssh-config $cfg -H alpha:2,be" \
  "^\\\$ ferryrun --ssh-config $cfg -H alpha:2,beta *\$"
check "bash: hosts from the hostfile" "ferryrun --hostfile $hf -H n" '^n1 +n2 *$' 2
check_not "bash: patterns are no hosts" "ferryrun --ssh-config $cfg -H " 'example'
check_not "bash: no option of ferryrun's inside the command" "ferryrun -np 2 python3 --ship-f" \
  'ship-ferryd'
check "bash: options again after an MPMD ':'" "ferryrun -np 1 ./a : -np 1 --wd" \
  '^\$ ferryrun -np 1 \./a : -np 1 --wdir *$'
check "bash: a ferry command" "ferry at" '^\$ ferry attach *$'
check "bash: a job id" "ferry stop ${id:0:3}" "^\\\$ ferry stop $id *\$"
check "bash: a ferry command's option" "ferry logs --fol" '^\$ ferry logs --follow *$'

start zsh env ZDOTDIR="$T" zsh -i
check "zsh: an option" "ferryrun --ship-f" '^\$ ferryrun --ship-ferryd *$'
check "zsh: a listed value" "ferryrun --tag-style op" '^\$ ferryrun --tag-style openmpi *$'
check "zsh: a value from the completion's table" "ferryrun --bind-to hw" \
  '^\$ ferryrun --bind-to hwthread *$'
check "zsh: a host from ssh_config in -H's list" "ferryrun --ssh-config $cfg -H alpha:2,be" \
  "^\\\$ ferryrun --ssh-config $cfg -H alpha:2,beta"
check "zsh: a ferry command" "ferry at" '^\$ ferry attach *$'
check "zsh: a job id" "ferry stop ${id:0:3}" "^\\\$ ferry stop $id"

if ((failures)); then
  echo "completion.sh: $failures failure(s)" >&2
  exit 1
fi
echo "completion.sh: bash and zsh complete options, values, hosts, commands and job ids"
