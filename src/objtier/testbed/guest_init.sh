#!/bin/sh
# /init of the objtier test machine (busybox sh, runs as PID 1 in the initramfs).
#
# 1. mounts proc, sys, devtmpfs, debugfs; loads the modules listed in /etc/objtier/modules.order
#    (paths under /lib/modules/<kver>, already in dependency order, uncompressed);
# 2. mounts the host's root read-only (9p tag "hostroot") at /host, the project tree read-write
#    (tag "repo") at /host<repo> and the spool (tag "spool") at /spool and /host/run/objtier/spool,
#    plus proc, sys, debugfs, dev, tmp, run inside /host, so that `chroot /host` is the host's
#    userland with the guest's kernel, and absolute paths into the project work unchanged;
# 3. serves the command port (virtio-serial port named "objtier.cmd"), one line per message:
#      host -> guest   RUN <id>      run /run/objtier/spool/<id>.sh in the chroot (own session),
#                                    stdout -> spool/<id>.out, stderr -> spool/<id>.err
#                      KILL <id>     SIGKILL the session of a running <id>
#                      PING <id>     liveness
#                      HALT <id>     power off
#      guest -> host   READY <uptime-seconds>      once, when the loop starts
#                      DONE <id> <exit-status>      (128+N when killed by signal N)
#                      PONG <id>
#    <id> is [A-Za-z0-9_-]+. Reading the port returns EOF while no host is connected; the loop
#    then sleeps 0.1 s and reads again.
export PATH=/bin:/sbin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug

log() { echo "objtier-init: $*" >/dev/console; }
fail() { log "powering off: $*"; poweroff -f; }

REPO=
for arg in $(cat /proc/cmdline); do
  case $arg in
    objtier.repo=*) REPO=${arg#objtier.repo=} ;;
  esac
done
[ -n "$REPO" ] || fail "no objtier.repo= on the kernel command line"

KVER=$(uname -r)
while read -r mod; do
  [ -n "$mod" ] || continue
  insmod "/lib/modules/$KVER/$mod" || fail "insmod $mod failed"
done </etc/objtier/modules.order

OPTS=trans=virtio,version=9p2000.L,msize=262144
mkdir -p /host /spool
mount -t 9p -o "$OPTS,ro,cache=loose" hostroot /host || fail "cannot mount the host root (9p)"
mount -t 9p -o "$OPTS,cache=mmap" spool /spool || fail "cannot mount the spool (9p)"
mount -t proc proc /host/proc
mount -t sysfs sysfs /host/sys
mount -t debugfs debugfs /host/sys/kernel/debug
mount -t cgroup2 cgroup2 /host/sys/fs/cgroup 2>/dev/null
mount -t devtmpfs devtmpfs /host/dev
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts devpts /host/dev/pts
mount -t tmpfs tmpfs /host/dev/shm
mount -t tmpfs tmpfs /host/tmp
mount -t tmpfs tmpfs /host/run
# the project tree last, so a tree under /tmp or /run is not hidden by the tmpfs mounts
mkdir -p "/host$REPO" 2>/dev/null
mount -t 9p -o "$OPTS,cache=mmap" repo "/host$REPO" || fail "cannot mount $REPO (9p)"
mkdir -p /host/run/objtier/spool
mount --bind /spool /host/run/objtier/spool

PORT=
for d in /sys/class/virtio-ports/*; do
  [ "$(cat "$d/name" 2>/dev/null)" = objtier.cmd ] && PORT=/dev/${d##*/}
done
[ -n "$PORT" ] || fail "no virtio-serial port named objtier.cmd"
exec 3<>"$PORT" || fail "cannot open $PORT"

# run_job ID: runs in a background subshell; the job gets its own session so KILL reaches all
# of its processes; its session id is kept in /run-jobs/ID.
mkdir -p /run-jobs
run_job() {
  setsid chroot /host /bin/sh "/run/objtier/spool/$1.sh" \
    >"/spool/$1.out" 2>"/spool/$1.err" </dev/null &
  echo $! >"/run-jobs/$1"
  wait $!
  rc=$?
  rm -f "/run-jobs/$1"
  echo "DONE $1 $rc" >&3
}

read -r up _ </proc/uptime
log "ready after ${up}s"
echo "READY $up" >&3
while :; do
  if ! read -r verb id _ <&3; then
    sleep 0.1
    continue
  fi
  case $id in
    ''|*[!A-Za-z0-9_-]*) continue ;;
  esac
  case $verb in
    RUN) run_job "$id" & ;;
    KILL) [ -f "/run-jobs/$id" ] && kill -KILL "-$(cat "/run-jobs/$id")" 2>/dev/null ;;
    PING) echo "PONG $id" >&3 ;;
    HALT) sync; poweroff -f ;;
  esac
done
