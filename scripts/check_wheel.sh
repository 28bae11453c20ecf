#!/usr/bin/env bash
# Build the stepgate wheel (distribution `stepgate-gpu`: the `stepgate` command and the
# `stepgate` Python module, the extension `stepgate._native` built from python/), install
# it into a fresh virtualenv, and run the README's first example and a gate through the
# installed command with no Rust toolchain on PATH; then the Python tests (python/tests,
# pytest with polars, pandas and pyarrow from the package index) against the installed
# wheel, not the source tree; then the action's install step (scripts/action/install.sh)
# with the same wheel.
#
# The wheel is built by maturin with zig as the linker (`--zig`), for manylinux2014
# (glibc 2.17); the check reads the GLIBC symbol versions the extension needs and fails
# when one is above the tag's floor.
#
# STEPGATE_WHEEL_PROFILE: the cargo profile (default `release`, the distributed wheel).
#   .ci/run passes `dev`: same sources, same zig link and manylinux tag, a fraction of
#   the build time of the fat-LTO release profile (README, Development).
# STEPGATE_TOOLS_VENV: where maturin and ziglang live (default target/wheel-tools).
# STEPGATE_WHEEL_PYTEST=0 leaves the Python tests out (they need the package index).
# Prints the wheel's size, the installed extension's size and the build's time.
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
wheel="$(ls "$out"/stepgate_gpu-*.whl)"
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

# The highest GLIBC_x.y the extension asks for must not exceed the tag's floor.
"$tools/bin/python" - "$wheel" "$scratch/stepgate.bin" << 'PY'
import re, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if re.fullmatch(r"stepgate/_native\..*so", n))
    open(sys.argv[2], "wb").write(z.read(name))
PY
need="$(objdump -T "$scratch/stepgate.bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' \
  | sort -t. -k1,1n -k2,2n -u | tail -n 1)"
echo "highest glibc symbol version needed: $need (floor $glibc_floor)"
if [ "$(printf '%s\n%s\n' "$need" "$glibc_floor" | sort -t. -k1,1n -k2,2n | tail -n 1)" != "$glibc_floor" ]; then
  echo "check_wheel: the extension needs glibc $need, above manylinux2014's $glibc_floor" >&2
  exit 1
fi

# A fresh virtualenv, the wheel installed from the file alone (no index).
venv="$scratch/venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$wheel"
echo "installed extension: $(du -k "$venv"/lib/python3*/site-packages/stepgate/_native*.so | cut -f1) KiB"

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
grep -q '1 steps by engine step markers on 1' "$scratch/steps.txt"  # (the line wraps at the width)
grep -q 'host stall' "$scratch/steps.txt"
# A gate through the installed command: the bundled report against its baseline passes.
run stepgate gate examples/vllm_decode_synthetic_h100.sqlite \
  --baseline baselines/example-h100-vllm-decode.json --markdown "$scratch/gate.md" > /dev/null
grep -q '^### ✅ Pass' "$scratch/gate.md"
# The command's errors: one line, the documented exit code (2: not a capture).
printf 'not a capture\n' > "$scratch/junk.sqlite"
set +e
run stepgate steps "$scratch/junk.sqlite" 2> "$scratch/junk.err"
code=$?
set -e
[ "$code" = 2 ] && [ "$(wc -l < "$scratch/junk.err")" = 1 ] && grep -q '^stepgate: error: ' "$scratch/junk.err"

# A `stepgate` module without our native part (another project's package of that name
# mixed with ours) is named in one line with what to uninstall, not a bare traceback.
mkdir -p "$scratch/foreign"
cp -r "$venv"/lib/python3*/site-packages/stepgate "$scratch/foreign/"
rm "$scratch"/foreign/stepgate/_native*.so
set +e
run env PYTHONPATH="$scratch/foreign" python -c 'import stepgate' 2> "$scratch/foreign.err"
code=$?
set -e
[ "$code" != 0 ] && grep -q "^ImportError: stepgate: .*pip uninstall -y stepgate stepgate-gpu" "$scratch/foreign.err"

# The Python module against the installed wheel: run from a directory outside the source
# tree, so `import stepgate` can only find the installed package.
if [ "${STEPGATE_WHEEL_PYTEST:-1}" != 0 ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check pytest polars pandas pyarrow
  (cd "$scratch" && run env STEPGATE_REPO="$root" python -m pytest -q -p no:cacheprovider \
    "$root/python/tests")
fi

# The action's install step with this wheel: a venv of its own, its bin/ on GITHUB_PATH.
: > "$scratch/github_path"
run env STEPGATE_VERSION="$wheel" STEPGATE_VENV="$scratch/action-venv" \
  GITHUB_PATH="$scratch/github_path" GITHUB_OUTPUT="$scratch/github_output" \
  bash scripts/action/install.sh
[ "$(cat "$scratch/github_path")" = "$scratch/action-venv/bin" ]
run env PATH="$scratch/action-venv/bin:$clean_path" stepgate gate \
  examples/vllm_decode_synthetic_h100.sqlite --baseline baselines/example-h100-vllm-decode.json > /dev/null
echo "wheel: ok"
