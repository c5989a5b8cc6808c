#!/usr/bin/env bash
# Regenerates tests/fixtures/checkpoints/ with real Flink (1.20 and 2.x) on a local MiniCluster.
# Needs a JDK 17 (javac, java) and Flink's jars, which PyPI's apache-flink-libraries ships:
#   FLINK2_LIB   directory with flink-dist-2.*.jar  (the 2.x wheel's pyflink/lib/)
#   FLINK120_LIB directory with flink-dist-1.20.*.jar (the 1.20.x sdist's deps/lib/)
# Without them it downloads both with `pip download --no-deps` into $SCRATCH (default: a temp dir).
# Usage: scripts/gen_checkpoints.sh [OUT_DIR]   (default tests/fixtures/checkpoints)
#        GEN_ONLY="flink2-p1-inline flink120-p1-file" limits the runs to those names.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$here/tests/fixtures/checkpoints}"
scratch="${SCRATCH:-$(mktemp -d)}"
py="${PYTHON:-python3}"
mkdir -p "$scratch"

if [ -z "${FLINK2_LIB:-}" ]; then
  "$py" -m pip download -q --no-deps "apache-flink-libraries==2.3.0" -d "$scratch/flink2"
  (cd "$scratch/flink2" && "$py" -m zipfile -e apache_flink_libraries-*.whl x >/dev/null)
  FLINK2_LIB="$scratch/flink2/x/pyflink/lib"
fi
if [ -z "${FLINK120_LIB:-}" ]; then
  "$py" -m pip download -q --no-deps --no-binary :all: "apache-flink-libraries==1.20.5" -d "$scratch/flink120"
  tar xzf "$scratch"/flink120/apache_flink_libraries-*.tar.gz -C "$scratch/flink120" --wildcards '*/deps/lib/*'
  FLINK120_LIB="$(echo "$scratch"/flink120/apache_flink_libraries-*/deps/lib)"
fi

opens="--add-opens java.base/java.util=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED"
gen="$here/tests/fixtures/checkpoints/gen/CheckpointGen.java"
sample="$here/sample_logs/production.markers.json"
markers="$("$py" -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))['markers']))" "$sample")"
seqs="$("$py" -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))['restore']['restored_seq']))" "$sample")"
pending="$scratch/production-pending.json"
buffered="$scratch/production-buffered.json"
"$py" "$here/tests/fixtures/checkpoints/gen/sample_pending.py" "$sample" "$here/sample_logs/production.jsonl" > "$pending"
"$py" "$here/tests/fixtures/checkpoints/gen/sample_pending.py" "$sample" "$here/sample_logs/production.jsonl" \
  --buffered > "$buffered"

run() {   # run VERSION_LIB NAME PARALLELISM inline|file [extra args]
  local lib="$1" name="$2"; shift 2
  if [ -n "${GEN_ONLY:-}" ] && [[ " $GEN_ONLY " != *" $name "* ]]; then return 0; fi
  local classes="$scratch/classes-$(basename "$(dirname "$lib")")-$(basename "$lib")"
  if [ ! -d "$classes" ]; then
    mkdir -p "$classes"
    javac -cp "$lib/*" -d "$classes" "$gen" $(find "$(dirname "$gen")/org" -name '*.java')
  fi
  local dir="$scratch/run-$name"
  rm -rf "$dir"
  # shellcheck disable=SC2086
  java $opens -cp "$classes:$lib/*" CheckpointGen "$dir" "$@" > "$dir.log" 2>&1 || { tail -20 "$dir.log"; exit 1; }
  "$py" "$here/tests/fixtures/checkpoints/gen/collect.py" "$dir" "$dir.log" "$out/$name"
}

run "$FLINK2_LIB" flink2-p1-inline 1 inline
run "$FLINK2_LIB" flink2-p4-file 4 file
run "$FLINK120_LIB" flink120-p1-file 1 file
run "$FLINK120_LIB" flink120-p4-inline 4 inline
run "$FLINK2_LIB" flink2-other-job 1 inline --other-job
run "$FLINK2_LIB" flink2-rocksdb-incremental 1 file --rocksdb incremental
run "$FLINK2_LIB" flink2-rocksdb-full 1 file --rocksdb full
run "$FLINK120_LIB" flink120-rocksdb-full 1 file --rocksdb full
run "$FLINK2_LIB" production 1 inline --markers "$markers" --seqs "$seqs" --pending-json "$pending" \
  --buffered-json "$buffered"
if [ "$out" = "$here/tests/fixtures/checkpoints" ] && { [ -z "${GEN_ONLY:-}" ] || [[ " $GEN_ONLY " == *" production "* ]]; }; then
  # the copy ai.samples.checkpoint("production") ships: the retained checkpoint's one file (keyed state inline)
  rm -rf "$here/agent_inspect/samples/checkpoints/production"
  mkdir -p "$here/agent_inspect/samples/checkpoints/production"
  cp -r "$out"/production/checkpoints/chk-* "$here/agent_inspect/samples/checkpoints/production/"
fi
echo "checkpoints written to $out"
