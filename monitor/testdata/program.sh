#!/bin/sh
# The program of the monitor's tests: appends one line per run to $URAID_TEST_OUT with its
# arguments and the event's environment. An event whose message starts with "fail" makes it
# fail, one starting with "hang" makes it hang (in a child, as a script calling a stuck tool
# would).
case "$URAID_EVENT_JSON" in
*'"message":"fail'*)
	echo "failing as asked" >&2
	exit 3
	;;
*'"message":"hang'*)
	echo "hanging as asked"
	sleep 600 &
	echo $! >"$URAID_TEST_OUT.hung"
	wait
	;;
esac
printf 'args=%s|%s|%s|%s event=%s array=%s device=%s member=%s slot=%s json=%s\n' \
	"$#" "$1" "$2" "$3" "$URAID_EVENT" "$URAID_ARRAY" "$URAID_DEVICE" "$URAID_MEMBER" \
	"$URAID_MEMBER_SLOT" "$URAID_EVENT_JSON" >>"$URAID_TEST_OUT"
