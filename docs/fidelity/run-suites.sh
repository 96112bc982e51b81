#!/bin/sh
# Simulates the runs the fidelity suites compare with their committed real
# records, then scores them. From the repository root:
#   sh docs/fidelity/run-suites.sh        (about 2 minutes on 2 cores)
# The real records (docs/fidelity/records/) were measured once, on the
# reference host (6.18, cgroup v1) and in its qemu TCG guests (Debian 5.10
# and 6.1); docs/fidelity.md says how.
set -e
R="cargo run --release -q --"
# Tuning: the case the simulator's fixes were found on (docs/memcg.md). The
# host runs 6.18: its profile is v6.18 (v6.1 before 2026-11-28, fifth session).
$R sim stutterp --machine docs/fidelity/machines/host-1G.toml --kernel v6.18 \
    --set stutterp.duration_s=60 --set stutterp.workers=4 --out out/fidelity/host-stutterp-1G --force
# Tuning, like for like: a Debian 6.1 guest in a 1 GiB cgroup, THPs off.
for r in guest-6.1-memcg-1G guest-6.1-memcg-1G-b guest-6.1-memcg-1G-c; do
    $R sim stutterp --machine docs/fidelity/records/$r --kernel v6.1 \
        --set stutterp.workers=2 --set stutterp.warmup_s=5 --set stutterp.duration_s=120 \
        --out out/fidelity/$r --force
done
# Held out: never looked at while fixing; the guest runs' own machines.
for k in 5.10:v5.10 6.1:v6.1 5.10-nothp:v5.10 6.1-nothp:v6.1; do
    g=${k%%:*}; p=${k##*:}; r=guest-${g%-nothp}-stutterp${g#${g%-nothp}}
    $R sim stutterp --machine docs/fidelity/records/$r --kernel $p \
        --set stutterp.workers=2 --set stutterp.warmup_s=5 --set stutterp.duration_s=120 \
        --out out/fidelity/$r --force
done
# Held out, replicates (2026-11-28, third session): two more runs of each
# guest's stutterp, THPs on and off, on a quiet host, so that a difference
# between the kernels can be told from one between runs (docs/fidelity.md,
# "Replicates").
for k in 5.10:v5.10 6.1:v6.1; do
    g=${k%%:*}; p=${k##*:}
    for r in guest-$g-stutterp-b guest-$g-stutterp-c guest-$g-stutterp-nothp-b guest-$g-stutterp-nothp-c guest-$g-stutterp-nothp-d guest-$g-stutterp-nothp-e; do
        [ -d docs/fidelity/records/$r ] || continue  # no guest-5.10-stutterp-c: that run hung
        $R sim stutterp --machine docs/fidelity/records/$r --kernel $p \
            --set stutterp.workers=2 --set stutterp.warmup_s=5 --set stutterp.duration_s=120 \
            --out out/fidelity/$r --force
    done
done
# Other workloads (2026-11-27, late): mapped-file-stream and dirty-pressure,
# on the host in a memory cgroup (tuning) and in both generations' guests
# with THPs off (held out).
$R sim mapped-file-stream --machine docs/fidelity/machines/host-1G.toml --kernel v6.18 \
    --out out/fidelity/host-mfs-1G --force
$R sim examples/workloads/dirty-pressure.toml --machine docs/fidelity/machines/host-128M.toml \
    --kernel v6.18 --out out/fidelity/host-dirty-pressure-128M --force
# The cgroup workload (2026-11-28, sixth session): memcg-congestion and its
# victim alone on the host's two throttled loop devices, in 1 GiB (v1).
$R sim memcg-congestion --machine examples/machines/ref-host-loops.toml --kernel v6.18 \
    --out out/fidelity/host-memcg-congestion --force
$R sim examples/workloads/memcg-victim-alone.toml --machine examples/machines/ref-host-loops.toml \
    --kernel v6.18 --out out/fidelity/host-memcg-victim-alone --force
# The shrinker workload (sixth session): fsmark-mlock-1g in the host's 1 GiB
# cgroup, its creators on a loop-mounted 4 GiB XFS image, which holds
# 2,097,152 inodes (imaxpct 25 % of 1 Mi 4 KiB blocks, 8 inodes a block).
$R sim fsmark-mlock-1g --machine docs/fidelity/machines/host-1G-xfs-image.toml --kernel v6.18 \
    --set xfs.maxicount=2097152 --out out/fidelity/host-fsmark-mlock-1g --force
for k in 5.10:v5.10 6.1:v6.1; do
    g=${k%%:*}; p=${k##*:}
    for x in "" -b -c -d -e -f; do
        $R sim mapped-file-stream --machine docs/fidelity/records/guest-$g-mfs$x --kernel $p \
            --out out/fidelity/guest-$g-mfs$x --force
    done
    # Twice the spec's sizes, as the guests ran it (a guest's cgroup is 256 MiB at least).
    for x in "" -b -c -d -e -f -g; do
        [ -d docs/fidelity/records/guest-$g-dirty-pressure$x ] || continue  # no 6.1 -f: its run overlapped a build
        $R sim examples/workloads/dirty-pressure.toml --machine docs/fidelity/records/guest-$g-dirty-pressure$x \
            --kernel $p --set anon-hog.size_mib=68 --set file-writer.file_mib=32 --set mmap-latency.pages=8192 \
            --out out/fidelity/guest-$g-dirty-pressure$x --force
    done
done
$R fidelity --suite docs/fidelity/suite-tuning.toml
$R fidelity --suite docs/fidelity/suite-held-out.toml
