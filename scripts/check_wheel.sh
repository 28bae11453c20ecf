#!/usr/bin/env bash
# Build the stepgate wheel, install it into a fresh virtualenv, and run the README's first
# example and a gate through the installed command with no Rust toolchain on PATH; then
# the action's install step (scripts/action/install.sh) with the same wheel.
#
# The wheel is built by maturin with zig as the linker (`--zig`), for manylinux2014
# (glibc 2.17); the check reads the GLIBC symbol versions the binary needs and fails when
# one is above the tag's floor.
#
# STEPGATE_WHEEL_PROFILE: the cargo profile (default `release`, the distributed wheel).
#   .ci/run passes `dev`: same sources, same zig link and manylinux tag, a fraction of
#   the build time of the fat-LTO release profile (README, Development).
# STEPGATE_TOOLS_VENV: where maturin and ziglang live (default target/wheel-tools).
# Prints the wheel's size and the installed binary's size.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
profile="${STEPGATE_WHEEL_PROFILE:-release}"
tools="${STEPGATE_TOOLS_VENV:-$root/target/wheel-tools}"
glibc_floor="2.17"

[ -x "$tools/bin/python" ] || python3 -m venv "$tools"
[ -x "$tools/bin/maturin" ] \
  || "$tools/bin/python" -m pip install --quiet --disable-pip-version-check 'maturin>=1.9,<2' 'ziglang>=0.12'

out="$root/target/wheels-check/$profile"
rm -rf "$out"
echo "== maturin build --profile $profile --zig --compatibility manylinux2014"
start=$SECONDS
# The commit for `stepgate --version` (build.rs reads git itself; this covers a copy
# of the tree without .git).
STEPGATE_COMMIT="$(git rev-parse HEAD 2> /dev/null || true)" \
  PATH="$tools/bin:$PATH" \
  "$tools/bin/maturin" build --locked --profile "$profile" --zig --compatibility manylinux2014 \
  --strip --out "$out" --quiet
echo "wheel built in $((SECONDS - start)) s"
wheel="$(ls "$out"/stepgate-*.whl)"
echo "wheel: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"
case "$(basename "$wheel")" in
  *manylinux_2_17_x86_64*) ;;
  *)
    echo "check_wheel: $wheel is not tagged manylinux_2_17" >&2
    exit 1
    ;;
esac

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# The highest GLIBC_x.y the binary asks for must not exceed the tag's floor.
"$tools/bin/python" - "$wheel" "$scratch/stepgate.bin" << 'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if n.endswith(".data/scripts/stepgate"))
    open(sys.argv[2], "wb").write(z.read(name))
PY
need="$(objdump -T "$scratch/stepgate.bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' \
  | sort -t. -k1,1n -k2,2n -u | tail -n 1)"
echo "highest glibc symbol version needed: $need (floor $glibc_floor)"
if [ "$(printf '%s\n%s\n' "$need" "$glibc_floor" | sort -t. -k1,1n -k2,2n | tail -n 1)" != "$glibc_floor" ]; then
  echo "check_wheel: the binary needs glibc $need, above manylinux2014's $glibc_floor" >&2
  exit 1
fi

# A fresh virtualenv, the wheel installed from the file alone (no index).
venv="$scratch/venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$wheel"
echo "installed binary: $(du -k "$venv/bin/stepgate" | cut -f1) KiB"

# PATH without any directory that holds a Rust toolchain (~/.cargo/bin, rustup).
clean_path=""
IFS=: read -r -a dirs <<< "$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] || continue
  [ -e "$d/cargo" ] || [ -e "$d/rustc" ] || [ -e "$d/rustup" ] && continue
  clean_path="${clean_path:+$clean_path:}$d"
done
run() { env PATH="$venv/bin:$clean_path" "$@"; }
if run bash -c 'command -v cargo || command -v rustc'; then
  echo "check_wheel: a Rust toolchain is still on PATH" >&2
  exit 1
fi
[ "$(run bash -c 'command -v stepgate')" = "$venv/bin/stepgate" ]

run stepgate --version
# The README's first example.
run stepgate steps tests/fixtures/kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz \
  --model qwen3-8b --gpu mi300x --each > "$scratch/steps.txt"
grep -q '1 steps by engine step markers on 1 rank(s)' "$scratch/steps.txt"
grep -q 'host stall' "$scratch/steps.txt"
# A gate through the installed command: the bundled report against its baseline passes.
run stepgate gate examples/vllm_decode_synthetic_h100.sqlite \
  --baseline baselines/example-h100-vllm-decode.json --markdown "$scratch/gate.md" > /dev/null
grep -q '^### ✅ Pass' "$scratch/gate.md"

# The action's install step with this wheel: a venv of its own, its bin/ on GITHUB_PATH.
: > "$scratch/github_path"
run env STEPGATE_VERSION="$wheel" STEPGATE_VENV="$scratch/action-venv" \
  GITHUB_PATH="$scratch/github_path" GITHUB_OUTPUT="$scratch/github_output" \
  bash scripts/action/install.sh
[ "$(cat "$scratch/github_path")" = "$scratch/action-venv/bin" ]
run env PATH="$scratch/action-venv/bin:$clean_path" stepgate gate \
  examples/vllm_decode_synthetic_h100.sqlite --baseline baselines/example-h100-vllm-decode.json > /dev/null
echo "wheel: ok"
