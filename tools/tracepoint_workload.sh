#!/bin/bash
# tracepoint_workload.sh DEV: ext4 on /dev/DEV (wiped!), then a few seconds of mixed IO with fio:
# a buffered 8 MiB write with fsync (plugs, merges, flushes), 4 KiB random direct reads and
# writes at depth 4. Small on purpose: the capture it makes is committed as test data.
set -eu
DEV=$1
MNT=$(mktemp -d)
mkfs.ext4 -q -F "/dev/$DEV"
mount "/dev/$DEV" "$MNT"
fio --name=seq --directory="$MNT" --rw=write --bs=128k --size=8m --fsync_on_close=1 \
    --end_fsync=1 --output=/dev/null
fio --name=rand --directory="$MNT" --rw=randrw --bs=4k --size=16m --direct=1 --iodepth=4 \
    --ioengine=libaio --runtime=1 --time_based --output=/dev/null
sync
umount "$MNT"; rmdir "$MNT"
