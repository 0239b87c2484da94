#!/usr/bin/env bash
# Trains a GMM model at cluster scale, the Kaldi way: each iteration runs
# `gmmscore acc-stats` over SHARDS shards of a feature list in parallel (an
# Indexed Job on GPU nodes, deploy/kubernetes/training/acc-stats-job.yaml),
# then `sum-accs` and `est` (a small CPU Job, est-job.yaml) make the next
# model; N iterations, with an optional mixing-up schedule.
#
#   tools/train_cluster.sh --init /data/exp/ubm/0.dubm --feats /data/train/feats.scp \
#       --exp /data/exp/ubm --shards 32 --iterations 4 --mix_up 256,512,1024 \
#       --image registry.example.com/gmmscore/gmmscored:1.0 [--namespace gmmscore --pvc gmmscore-train]
#
# Paths are as the pods see them, on the shared volume (PVC --pvc at
# --mount, /data): the initial model, feats.scp (whose entries must be
# paths under /data too), alignments, and the experiment directory:
#   EXP/split<SHARDS>/feats.<n>.scp   shard n of the feature list (split -n l/SHARDS)
#   EXP/acc/<i>/<n>.acc, all.acc      iteration i's statistics (shards' removed after est)
#   EXP/<i+1>.<ext>, EXP/final.<ext>  the model iteration i makes; final points at the last
# (<ext> is the initial model's: .mdl/.dubm/.ubm Kaldi binary, .txt Kaldi
# text, otherwise the native .gmm). Jobs are named gmmscore-{acc,est}-NAME-i;
# an earlier Job of the same name is deleted first, so an iteration can be
# run again (--start_iter).
#
# --local runs the same thing without Kubernetes: the very shell lines of
# the two templates (between their BEGIN and END markers), with the local
# gmmscore binary, shard after shard. That is how the driver is tested on
# this machine, and a way to train on one box.
#   tools/train_cluster.sh --local --init ubm0.dubm --feats feats.scp --exp exp/ubm --shards 3
#
# --print_manifests DIR writes the Jobs of iteration --start_iter to DIR and
# stops (tools/validate_deploy.sh validates what this renders).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
templates="$here/../deploy/kubernetes/training"

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  echo
  cat <<'EOF'
options:
  --init MODEL          model of iteration 0 (any format gmmscore reads)        (required)
  --feats SCP           feature list, Kaldi scp (KEY ARCHIVE:OFFSET lines)     (required)
  --exp DIR             experiment directory                                    (required)
  --shards N            acc-stats jobs per iteration (4); at most the utterances
  --iterations N        iterations (4)
  --start_iter K        resume at iteration K, from EXP/K.<ext> (0)
  --mix_up LIST         comma-separated: the est of iteration 0, 1, ... mixes up
                        to this many Gaussians (0 or past the list: no mixing-up)
  --alignments RSPEC    pdf-id alignments (JOB: the shard number, e.g. ark:ali.JOB.ark)
  --acc_args "FLAGS"    more acc-stats flags (JOB: the shard number)
  --est_args "FLAGS"    more est flags, e.g. "--min_variance 0.01"
  --keep_accs           keep every shard's accumulator (default: only all.acc)
  --backend B           acc-stats backend (cluster: cuda; --local: auto)
cluster:
  --namespace NS (gmmscore)  --image IMAGE  --pvc CLAIM (gmmscore-train)  --mount DIR (/data)
  --parallelism N (shards)   --timeout_s S (21600: each Job's deadline and wait)
  --name NAME (from --exp)   --kubectl CMD (kubectl)   --print_manifests DIR
local:
  --local               run here, no Kubernetes
  --gmmscore PATH       the gmmscore binary (build/client/cli/gmmscore, else PATH)
EOF
}
die() { echo "train_cluster: $*" >&2; exit 1; }
log() { echo "train_cluster: [$(date +%H:%M:%S)] $*"; }

LOCAL=0 INIT="" FEATS="" EXP="" SHARDS=4 ITERATIONS=4 START_ITER=0 MIX_UP_LIST="" ALIGNMENTS=""
ACC_ARGS="" EST_ARGS="" KEEP_ACCS=0 BACKEND="" NAMESPACE=gmmscore IMAGE="" PVC=gmmscore-train
MOUNT=/data PARALLELISM="" TIMEOUT_S=21600 EXP_NAME="" KUBECTL=kubectl PRINT_DIR="" GMMSCORE=""
while [ $# -gt 0 ]; do
  opt=$1
  case $opt in
    --local) LOCAL=1; shift; continue ;;
    --keep_accs) KEEP_ACCS=1; shift; continue ;;
    -h|--help) usage; exit 0 ;;
  esac
  [ $# -ge 2 ] || die "$opt needs a value (see --help)"
  val=$2; shift 2
  case $opt in
    --init) INIT=$val ;;            --feats) FEATS=$val ;;          --exp) EXP=${val%/} ;;
    --shards) SHARDS=$val ;;        --iterations) ITERATIONS=$val ;; --start_iter) START_ITER=$val ;;
    --mix_up) MIX_UP_LIST=$val ;;   --alignments) ALIGNMENTS=$val ;;
    --acc_args) ACC_ARGS=$val ;;    --est_args) EST_ARGS=$val ;;    --backend) BACKEND=$val ;;
    --namespace) NAMESPACE=$val ;;  --image) IMAGE=$val ;;          --pvc) PVC=$val ;;
    --mount) MOUNT=${val%/} ;;      --parallelism) PARALLELISM=$val ;;
    --timeout_s) TIMEOUT_S=$val ;;  --name) EXP_NAME=$val ;;        --kubectl) KUBECTL=$val ;;
    --print_manifests) PRINT_DIR=$val ;;  --gmmscore) GMMSCORE=$val ;;
    *) die "unknown option $opt (see --help)" ;;
  esac
done

[ -n "$INIT" ] && [ -n "$FEATS" ] && [ -n "$EXP" ] || die "--init, --feats and --exp are required (see --help)"
is_count() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
is_count "$SHARDS" || die "--shards must be a positive integer: $SHARDS"
is_count "$ITERATIONS" || die "--iterations must be a positive integer: $ITERATIONS"
[[ $START_ITER =~ ^[0-9]+$ ]] && [ "$START_ITER" -lt "$ITERATIONS" ] ||
  die "--start_iter must be 0..$((ITERATIONS - 1)): $START_ITER"
[[ $MIX_UP_LIST =~ ^([0-9]+(,[0-9]+)*)?$ ]] || die "--mix_up must be comma-separated integers: $MIX_UP_LIST"
IFS=, read -r -a mix_up <<< "$MIX_UP_LIST"
PARALLELISM=${PARALLELISM:-$SHARDS}
is_count "$PARALLELISM" || die "--parallelism must be a positive integer: $PARALLELISM"
is_count "$TIMEOUT_S" || die "--timeout_s must be a positive integer: $TIMEOUT_S"

# Models keep the initial model's format (est picks it by the file name).
case $INIT in
  *.mdl) ext=mdl ;; *.dubm) ext=dubm ;; *.ubm) ext=ubm ;; *.txt) ext=txt ;; *) ext=gmm ;;
esac
model_of() { if [ "$1" -eq 0 ]; then echo "$INIT"; else echo "$EXP/$1.$ext"; fi; }
FINAL_MODEL="$EXP/final.$ext"

# The shell lines between "# BEGIN STEP" and "# END STEP" of a template, unindented.
step_script() {
  awk -v step="$2" '
    $0 ~ "# BEGIN " step "( |$)" { on = 1; match($0, /^ */); cut = RLENGTH }
    on { print substr($0, cut + 1) }
    $0 ~ "# END " step "$" { on = 0 }' "$1"
}

# Template placeholders ${NAME}, filled from the variables of the same name.
placeholders=(JOB_NAME NAMESPACE EXP_NAME ITER SHARDS PARALLELISM DEADLINE_S IMAGE PVC MOUNT EXP FEATS
              MODEL ALIGNMENTS ACC_ARGS BACKEND NEXT_MODEL FINAL_MODEL MIX_UP EST_ARGS KEEP_ACCS)
render() {
  local text name value left
  text=$(<"$1")
  for name in "${placeholders[@]}"; do
    value=${!name}
    text=${text//"\${$name}"/"$value"}
  done
  left=$(grep -o '\${[A-Za-z_][A-Za-z0-9_]*}' <<< "$text" | sort -u | tr '\n' ' ' || true)
  [ -z "$left" ] || die "$1: placeholders the driver does not know: $left"
  printf '%s\n' "$text"
}

# Sets the variables of iteration $1 (0-based) that the templates and scripts use.
set_iteration() {
  ITER=$1
  MODEL=$(model_of "$ITER")
  NEXT_MODEL=$(model_of $((ITER + 1)))
  MIX_UP=${mix_up[$ITER]:-0}
  mixing=""
  if [ "$MIX_UP" -gt 0 ]; then mixing=" (mixing up to $MIX_UP)"; fi
}

if [ "$LOCAL" -eq 1 ]; then
  # ---- the same steps on this machine ----
  [ -z "$PRINT_DIR" ] || die "--print_manifests is for the cluster mode"
  BACKEND=${BACKEND:-auto}
  if [ -z "$GMMSCORE" ]; then
    if [ -x "$here/../build/client/cli/gmmscore" ]; then GMMSCORE=$(realpath "$here/../build/client/cli/gmmscore")
    else GMMSCORE=$(command -v gmmscore) || die "no gmmscore binary: build it or give --gmmscore"; fi
  fi
  [ -x "$GMMSCORE" ] || die "not an executable: $GMMSCORE"
  [ -e "$(model_of "$START_ITER")" ] || die "no model for iteration $START_ITER: $(model_of "$START_ITER")"
  [ -f "$FEATS" ] || die "no feature list: $FEATS"
  utterances=$(grep -c . "$FEATS" || true)
  [ "$utterances" -ge "$SHARDS" ] || die "$FEATS has $utterances utterances, fewer than --shards $SHARDS"
  # The scripts call `gmmscore`, as in the image.
  bin=$(mktemp -d)
  trap 'rm -rf "$bin"' EXIT
  ln -s "$(realpath "$GMMSCORE")" "$bin/gmmscore"
  acc_script=$(step_script "$templates/acc-stats-job.yaml" acc-stats)
  est_script=$(step_script "$templates/est-job.yaml" est)
  [ -n "$acc_script" ] && [ -n "$est_script" ] || die "no BEGIN/END script in the templates of $templates"
  mkdir -p "$EXP"
  log "local: iterations $START_ITER..$((ITERATIONS - 1)) from $(model_of "$START_ITER"), $utterances utterances in $SHARDS shards, $GMMSCORE"
  for ((i = START_ITER; i < ITERATIONS; i++)); do
    set_iteration "$i"
    log "iteration $i: acc-stats x $SHARDS with $MODEL"
    for ((index = 0; index < SHARDS; index++)); do
      env PATH="$bin:$PATH" JOB_COMPLETION_INDEX=$index EXP="$EXP" FEATS="$FEATS" SHARDS="$SHARDS" \
          ITER="$ITER" MODEL="$MODEL" ALIGNMENTS="$ALIGNMENTS" ACC_ARGS="$ACC_ARGS" BACKEND="$BACKEND" \
          sh -c "$acc_script" || die "iteration $i: acc-stats of shard $((index + 1)) failed"
    done
    log "iteration $i: sum-accs, est$mixing -> $NEXT_MODEL"
    env PATH="$bin:$PATH" EXP="$EXP" SHARDS="$SHARDS" ITER="$ITER" MODEL="$MODEL" NEXT_MODEL="$NEXT_MODEL" \
        FINAL_MODEL="$FINAL_MODEL" MIX_UP="$MIX_UP" EST_ARGS="$EST_ARGS" KEEP_ACCS="$KEEP_ACCS" \
        sh -c "$est_script" || die "iteration $i: est failed"
  done
  log "done: $FINAL_MODEL -> $(readlink "$FINAL_MODEL")"
  exit 0
fi

# ---- cluster ----
[ -n "$IMAGE" ] || die "--image is required (the gmmscored image, which carries gmmscore)"
BACKEND=${BACKEND:-cuda}
# shellcheck disable=SC2034  # read by render, as ${!name}
DEADLINE_S=$TIMEOUT_S
if [ -z "$EXP_NAME" ]; then EXP_NAME=$(basename "$EXP"); fi
# A DNS label: Job names gmmscore-acc-NAME-i stay within 63 characters.
EXP_NAME=$(printf '%s' "$EXP_NAME" | tr '[:upper:]' '[:lower:]' | tr -c 'a-z0-9' '-' | tr -s '-' | cut -c1-40 |
           sed 's/^-*//; s/-*$//')
[ -n "$EXP_NAME" ] || die "cannot make a Job name from --exp $EXP: give --name"
[[ $NAMESPACE =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] || die "bad --namespace: $NAMESPACE"
[[ $PVC =~ ^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$ ]] || die "bad --pvc: $PVC"
[[ $IMAGE =~ ^[][A-Za-z0-9./:@_-]+$ ]] || die "bad --image: $IMAGE"
# Values go into double-quoted YAML strings and environment variables,
# where Kubernetes would expand $(VAR): none of these characters.
for name in MOUNT EXP FEATS INIT ALIGNMENTS ACC_ARGS EST_ARGS BACKEND; do
  case ${!name} in
    *'"'* | *\\* | *'$'* | *$'\n'*) die "--${name,,} may not hold \", \\, \$ or a newline: ${!name}" ;;
  esac
done
case $EXP/ in "$MOUNT"/*) ;; *) die "--exp $EXP is not on the volume (--mount $MOUNT)" ;; esac

if [ -n "$PRINT_DIR" ]; then
  mkdir -p "$PRINT_DIR"
  set_iteration "$START_ITER"
  JOB_NAME="gmmscore-acc-$EXP_NAME-$ITER" render "$templates/acc-stats-job.yaml" > "$PRINT_DIR/acc-stats-job.yaml"
  JOB_NAME="gmmscore-est-$EXP_NAME-$ITER" render "$templates/est-job.yaml" > "$PRINT_DIR/est-job.yaml"
  echo "$PRINT_DIR/acc-stats-job.yaml $PRINT_DIR/est-job.yaml"
  exit 0
fi

if ((BASH_VERSINFO[0] < 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] < 1))); then
  die "needs bash 5.1 or later (wait -n -p)"
fi
command -v "$KUBECTL" > /dev/null || die "no $KUBECTL"
k() { "$KUBECTL" -n "$NAMESPACE" "$@"; }

# Waits until job $1 is complete (0) or failed (1, with its pods' last log lines).
wait_job() {
  local job=$1 ok bad first="" rc=0
  # exec: $! is kubectl itself, so the kill below reaches it (a function
  # in the background is a subshell, which would leave kubectl running).
  (exec "$KUBECTL" -n "$NAMESPACE" wait --for=condition=complete --timeout="${TIMEOUT_S}s" "job/$job" > /dev/null 2>&1) & ok=$!
  (exec "$KUBECTL" -n "$NAMESPACE" wait --for=condition=failed --timeout="${TIMEOUT_S}s" "job/$job" > /dev/null 2>&1) & bad=$!
  wait -n -p first "$ok" "$bad" || rc=$?
  kill "$ok" "$bad" 2> /dev/null || true
  wait "$ok" "$bad" 2> /dev/null || true
  if [ "$rc" -eq 0 ] && [ "$first" = "$ok" ]; then return 0; fi
  if [ "$rc" -eq 0 ] && [ "$first" = "$bad" ]; then
    echo "train_cluster: job/$job failed:" >&2
  else
    echo "train_cluster: job/$job neither completed nor failed within ${TIMEOUT_S}s (or kubectl failed):" >&2
  fi
  k get job "$job" -o wide >&2 || true
  k get pods -l "job-name=$job" -o wide >&2 || true
  k logs -l "job-name=$job" --prefix --tail=20 --max-log-requests=20 >&2 || true
  return 1
}

# Applies the rendered template $2 as job $1 (deleting an earlier one) and waits for it.
run_job() {
  local job=$1 template=$2
  # Foreground: returns once its pods are gone too, so none still writes.
  k delete job "$job" --ignore-not-found --cascade=foreground --wait=true > /dev/null || return 1
  JOB_NAME=$job render "$template" | k apply -f - > /dev/null || return 1
  log "job/$job applied; waiting (up to ${TIMEOUT_S}s)"
  wait_job "$job"
}

log "cluster: namespace $NAMESPACE, image $IMAGE, volume $PVC at $MOUNT; iterations $START_ITER..$((ITERATIONS - 1)), $SHARDS shards ($PARALLELISM at once)"
for ((i = START_ITER; i < ITERATIONS; i++)); do
  set_iteration "$i"
  log "iteration $i: acc-stats x $SHARDS with $MODEL"
  run_job "gmmscore-acc-$EXP_NAME-$i" "$templates/acc-stats-job.yaml" || die "iteration $i: acc-stats failed"
  log "iteration $i: sum-accs, est$mixing -> $NEXT_MODEL"
  run_job "gmmscore-est-$EXP_NAME-$i" "$templates/est-job.yaml" || die "iteration $i: est failed"
done
log "done: $FINAL_MODEL (on $PVC) is $(model_of "$ITERATIONS")"
