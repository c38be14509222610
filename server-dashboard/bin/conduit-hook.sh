#!/bin/sh
# The Hermes shell-hook bridge in POSIX sh and curl: `sh conduit-hook.sh --state DIR <event>`.
#
# The same bridge as conduit-hook.mjs, for machines with curl: starting sh and curl costs a few
# milliseconds where starting Node alone costs 60-90, and Hermes waits for every hook. It forwards the
# JSON on stdin, unread, to the running host service over loopback and prints the service's answer
# for Hermes. It must never slow or break Hermes: when the service is not running it exits 0 at once
# and prints nothing, and every error ends the same way.
#
# The service writes <state dir>/runtime.curl (mode 0600) on every boot: a curl config holding the
# loopback URL and the boot's token, so the token reaches curl through a file and never appears on a
# command line that `ps` shows.

state=${CONDUIT_STATE_DIR:-}
event=
while [ $# -gt 0 ]; do
  case $1 in
    --state)
      shift
      state=${1:-}
      ;;
    --state=*) state=${1#--state=} ;;
    *) [ -n "$event" ] || event=$1 ;;
  esac
  [ $# -gt 0 ] && shift
done
[ -n "$state" ] || state=${HERMES_HOME:-${HOME:-}/.hermes}/conduit-host
config=$state/runtime.curl

# Not running (no runtime file), or nothing to forward: say nothing.
[ -r "$config" ] || exit 0
[ -t 0 ] && exit 0

# A held clarify call waits for the phone (bounded by the service's budget, under Hermes' 300 s cap);
# the same budgets as the Node bridge.
max_time=10
[ "$event" = pre_tool_call ] && max_time=295

# Hermes may run hooks with a bare PATH.
PATH=${PATH:-/usr/bin:/bin}:/usr/bin:/bin:/usr/local/bin
export PATH

# -q first: ignore ~/.curlrc; --noproxy: loopback never goes through a proxy from the environment;
# "expect:" drops curl's 100-continue wait on large payloads.
nl='
'
out=$(curl -q -s --noproxy '*' --connect-timeout 0.5 --max-time "$max_time" --config "$config" \
  -H 'content-type: application/json' -H 'expect:' --data-binary @- \
  -w "$nl%{http_code}" 2>/dev/null) || exit 0

status=${out##*"$nl"}
body=${out%"$nl"*}
case $status in
  2??) ;;
  *) exit 0 ;;
esac
[ -n "$body" ] || exit 0
case $body in
  *"$nl") printf '%s' "$body" ;;
  *) printf '%s\n' "$body" ;;
esac
exit 0
