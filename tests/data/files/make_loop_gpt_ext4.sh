#!/bin/bash
# How tests/data/files/loop-gpt-ext4 (+ .maps) was made (root; run from the repository root).
# A 384 MiB loop image with a GPT: p1 (160 MiB at sector 2048) and p2 (the rest, at 329728),
# ext4 (4 KiB blocks) on both; tools/files_workload.py runs on each (tags p1*, p2*) while
# blkscope captures loop1 with --files on both; then filefrag -v / debugfs maps are taken by
# hand, both filesystems unmounted, and tools/files_truth.py reads the image at 1,500 sampled
# sectors of the traced bios.
set -e
W=${W:-/work/h16scratch}; OUT=${OUT:-$W/capg}; REPO=$PWD
cd $W
umount $W/g1.p1 $W/g1.p2 2>/dev/null || true
[ -f g1.loop ] && losetup -d $(cat g1.loop) 2>/dev/null || true
rm -f g1.img
truncate -s 384M g1.img
printf 'label: gpt\nstart=2048, size=327680\nsize=+\n' | sfdisk -q g1.img
L=$(losetup -f --show g1.img); echo $L > g1.loop; D=$(basename $L)
partx -a $L   # this kernel scans no partitions of a loop device by itself
for p in 1 2; do
  n=${D}p$p
  rm -f /dev/$n; mknod /dev/$n b $(cut -d: -f1 /sys/class/block/$n/dev) $(cut -d: -f2 /sys/class/block/$n/dev)
  mkfs.ext4 -q -F -b 4096 /dev/$n
  mkdir -p g1.p$p; mount /dev/$n g1.p$p; mkdir -p g1.p$p/mq
done
cd $REPO
flock /tmp/blkscope-tracefs.lock python -m blkscope.cli capture -d $D -o $OUT --force --duration 40 \
  --files $W/g1.p1/mq --files $W/g1.p2/mq -- sh -c \
  "python tools/files_workload.py $W/g1.p1/mq 34 0.1 p1 & python tools/files_workload.py $W/g1.p2/mq 34 0.05 p2; wait"
for p in 1 2; do
  (find $W/g1.p$p/mq -type f | sort | xargs filefrag -v) > $OUT/filefrag-p$p.txt
  start=$(cat /sys/class/block/${D}p$p/start); size=$(cat /sys/class/block/${D}p$p/size)
  blocks=$(python3 -c "
import re,sys
b=set()
for line in open('$OUT/blkparse.txt','rb'):
    m=re.match(rb'\s*\d+,\d+\s+\d+\s+\d+\s+\d+\.\d+\s+\d+\s+Q\s+[A-Z]+\s+(\d+) \+ (\d+)',line)
    if m and $start<=int(m[1])<$start+$size:
        s,n=int(m[1])-$start,int(m[2]); b.update(range(s//8,(s+max(n,1)-1)//8+1))
print(' '.join(map(str,sorted(b))))")
  debugfs -R "icheck $blocks" /dev/${D}p$p > $OUT/debugfs-p$p.txt 2>/dev/null
  inodes=$(awk -F'\t' 'NR>1 && $2 ~ /^[0-9]+$/ {print $2}' $OUT/debugfs-p$p.txt | sort -nu | tr '\n' ' ')
  debugfs -R "ncheck $inodes" /dev/${D}p$p >> $OUT/debugfs-p$p.txt 2>/dev/null
  debugfs -R stats /dev/${D}p$p 2>/dev/null | grep -E '^(Block size|Journal inode):' >> $OUT/debugfs-p$p.txt
done
umount $W/g1.p1 $W/g1.p2
rm -rf $OUT.ds
python -m blkscope.cli ingest $OUT -o $OUT.ds
python -m blkscope.cli analyze -q $OUT.ds
python tools/files_truth.py $OUT.ds $W/g1.img $OUT/tag_truth.csv 1500
partx -d $L; losetup -d $L
T=tests/data/files/loop-gpt-ext4; rm -rf $T $T.maps; mkdir -p $T $T.maps
cp $OUT/{capture.json,file_extents.parquet,clock.txt,cmdlines.txt,iostat.txt,vmstat.txt,meminfo.txt,writeback_ns.txt} $T/
for i in 0 1; do zstd -q -19 -f $OUT/trace.blktrace.$i -o $T/trace.blktrace.$i.zst; done
cp $OUT/{filefrag-p1.txt,filefrag-p2.txt,debugfs-p1.txt,debugfs-p2.txt,tag_truth.csv} $T.maps/
