#!/bin/sh
# Simulates the runs the fidelity suites compare with their committed real
# records, then scores them. From the repository root:
#   sh docs/fidelity/run-suites.sh        (about 2 minutes on 2 cores)
# The real records (docs/fidelity/records/) were measured once, on the
# reference host (6.18, cgroup v1) and in its qemu TCG guests (Debian 5.10
# and 6.1); docs/fidelity.md says how.
set -e
R="cargo run --release -q --"
# Tuning: the case the simulator's fixes were found on (docs/memcg.md).
$R sim stutterp --machine docs/fidelity/machines/host-1G.toml --kernel v6.1 \
    --set stutterp.duration_s=60 --set stutterp.workers=4 --out out/fidelity/host-stutterp-1G --force
# Tuning, like for like: a Debian 6.1 guest in a 1 GiB cgroup, THPs off.
for r in guest-6.1-memcg-1G guest-6.1-memcg-1G-b; do
    $R sim stutterp --machine docs/fidelity/records/$r --kernel v6.1 \
        --set stutterp.workers=2 --set stutterp.warmup_s=5 --set stutterp.duration_s=120 \
        --out out/fidelity/$r --force
done
# Held out: never looked at while fixing; the guest runs' own machines.
for k in 5.10:v5.15 6.1:v6.1 5.10-nothp:v5.15 6.1-nothp:v6.1; do
    g=${k%%:*}; p=${k##*:}; r=guest-${g%-nothp}-stutterp${g#${g%-nothp}}
    $R sim stutterp --machine docs/fidelity/records/$r --kernel $p \
        --set stutterp.workers=2 --set stutterp.warmup_s=5 --set stutterp.duration_s=120 \
        --out out/fidelity/$r --force
done
$R fidelity --suite docs/fidelity/suite-tuning.toml
$R fidelity --suite docs/fidelity/suite-held-out.toml
