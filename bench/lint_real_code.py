#!/usr/bin/env python3
"""Real-code benchmark for `desync lint`: precision, findings per kLOC and speed.

Downloads pinned wheels/sdists from PyPI at bench time (never committed; cached outside the
repo in $DESYNC_LINT_BENCH_CACHE, default ~/.cache/desync/lint-bench), verifies their
sha256, unpacks them, and lints each with the release binary. It also lints torch's own
`torch/distributed` from the test venv (`scripts/venv.sh`), the repository's scenario jobs
(`tests/scenarios/*/src`) and the external cases (`../shared/external-cases/cases/*/src`).

Findings are compared with the reviewed list `bench/lint_reviewed.csv` (package, version,
file, line, rule, verdict, seen, reason). A verdict is `true` (a real risk that some ranks
issue a collective the others don't, or a different one), `safe` (an intentional, paired or
agreed construct: the rule describes the code but there is no desync) or `false` (the rule
misread the code). `seen` says whether the finding was reported when the list was last
updated. The run prints precision (true / reviewed) per rule and overall, findings per
kLOC, lines/s per core (lines over the linter's user+system CPU time) and the unreviewed
findings, and exits 1 when
- a reviewed `true` finding with seen=yes disappears (recall on reviewed real risks must not
  drop), or
- a reviewed `false` finding with seen=no comes back (a fixed false alarm must stay fixed).
A `true` finding with seen=no is a known miss: a real risk the linter does not report (its
reason says why); the run lists them and says when one is found again. `--update` never marks
a true finding missed: that is a decision written by hand, with the reason.
A `false` (or `safe`) finding that disappears is progress: `--update` records it (seen=no)
so that it cannot come back unnoticed.

    python3 bench/lint_real_code.py                      # download (once), lint, compare
    python3 bench/lint_real_code.py --sample 60 --seed 12  # print a seeded sample to review
    python3 bench/lint_real_code.py --update             # record `seen` from this run
    python3 bench/lint_real_code.py --json out.json      # machine-readable results

Run by hand, like scripts/bench.sh; it is not part of the test command or CI.
"""

from __future__ import annotations

import argparse
import collections
import csv
import hashlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REVIEWED = REPO / "bench" / "lint_reviewed.csv"
FIELDS = ["package", "version", "file", "line", "rule", "verdict", "seen", "reason"]
VERDICTS = ("true", "safe", "false")
INDEX = "https://pypi.org/simple/{name}/"

# Pinned downloads: (package, version, file name on PyPI, sha256). Wheels and sdists are only
# unpacked, never installed or built, so a platform wheel (megatron-core) is fine anywhere.
PINNED = [
    ("pytorch-lightning", "2.6.6", "pytorch_lightning-2.6.6-py3-none-any.whl",
     "71f95c7b22f25c4f91cc659e1734bcdc6c69c8b66543f2ed2d78dbe29ce2f167"),
    ("lightning-fabric", "2.6.6", "lightning_fabric-2.6.6-py3-none-any.whl",
     "58244e08eddb4bbd2787fe91cc6e14499fee06ee0e22a43b45772204c75e2627"),
    ("accelerate", "1.15.0", "accelerate-1.15.0-py3-none-any.whl",
     "97eacca0b73e45cb867dbf8c5d5d4dc32219544300e0c8992c7334dc2ef33cec"),
    ("transformers", "5.23.0", "transformers-5.23.0-py3-none-any.whl",
     "018e82fd07490ad5bb58414f65e31576033dc7f36bed10c574843f69b90991bf"),
    ("torchtitan", "0.3.0", "torchtitan-0.3.0-py3-none-any.whl",
     "5563ccf9a295b24e00a36087149e9c2d0686cecbd3972c31e67227029293af42"),
    ("deepspeed", "0.19.8", "deepspeed-0.19.8.tar.gz",
     "9e491abd0827ea5c389dd702e15e11e13d83d904bac4a20d6c2a4cb37207a9af"),
    ("torchtune", "0.6.1", "torchtune-0.6.1-py3-none-any.whl",
     "bcbc4ee9774b5c5829a5ff13df851e0b0e32416c018af8db53faa3472ac256e7"),
    ("pytorch-ignite", "0.5.5", "pytorch_ignite-0.5.5-py3-none-any.whl",
     "9a397b0899968612efd00ac75bad64f20a9a91a8244f37bdcb8888af61455cf9"),
    ("megatron-core", "0.16.1", "megatron_core-0.16.1-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
     "38f6bef63cd4ebc4c39c1eccbaf578596accba5c47d012faffa0670913aec131"),
    # Projects with their own training loops, trainers and checkpointing around the
    # frameworks above (what users' code looks like).
    ("litgpt", "0.5.13", "litgpt-0.5.13-py3-none-any.whl",
     "da044b76c52cd44fc0564f6177ed6cf186dde24f711ce8e71e1fd9e9da5f02b2"),
    ("trl", "1.16.0", "trl-1.16.0-py3-none-any.whl", "c4726e139dd40e1a41661511c639c8a68416782b2e3e8c0befebd77bb7ba0396"),
    ("mosaicml", "0.32.1", "mosaicml-0.32.1-py3-none-any.whl", "d5dc601cec7af281d6a30ab8baccb7c495ee0044237893a991081f54617f8919"),
    ("colossalai", "0.5.0", "colossalai-0.5.0.tar.gz", "883913dfd1165937f444f2673752475efdc63506c4bc3d00af33c7c8fac6d39d"),
    ("fairscale", "0.4.13", "fairscale-0.4.13.tar.gz", "1b797825c427f5dba92253fd0d8daa574e8bd651a2423497775fab1b30cfb768"),
    ("torchrec", "1.9.2", "torchrec-1.9.2-py311-none-any.whl", "bb038a9ba9772f63cddc2faa5fdd7150be436d51c5655567769cda6abd719bfb"),
    ("nanotron", "0.4", "nanotron-0.4-py3-none-any.whl", "0c1834e91c17c651f430d46a1e779bc49991c33bda26cc237beae7d12b383ad9"),
    ("open-clip-torch", "3.3.0", "open_clip_torch-3.3.0-py3-none-any.whl", "c549ad5ed6bfc119cc11105033c0a2b9d7a2a4afeb40a58a09aab3da1a0043ce"),
    # Added in the twenty-third session after a first look from outside the bench: their
    # findings were reviewed before any change was made for them (docs/lint.md).
    ("axolotl", "0.19.0", "axolotl-0.19.0-py3-none-any.whl", "f28eb3ad3709975eec4adfe13307dd980c7e7917cc43cb03f2c6f26c007135cc"),
    ("diffusers", "0.42.1", "diffusers-0.42.1-py3-none-any.whl", "9154faa704ce00e0b77f568e0d64786064368528aab5fc14eeea92f87d788014"),
    ("mmengine", "0.10.7", "mmengine-0.10.7-py3-none-any.whl", "262ac976a925562f78cd5fd14dd1bc9b680ed0aa81f0d85b723ef782f99c54ee"),
    ("openrlhf", "0.11.2", "openrlhf-0.11.2-cp311-cp311-manylinux1_x86_64.whl",
     "c969d70db03a70724c3d8a5a01186c6e0728bce624fb3dff95e39b5396acefa6"),
    ("peft", "0.21.2", "peft-0.21.2-py3-none-any.whl", "106ab6077ff72c54d21577f9af5970e34bac7582cb14209f7b2b511e322a4eae"),
    ("sentence-transformers", "6.2.0", "sentence_transformers-6.2.0-py3-none-any.whl",
     "ffb51ccfef65427cfa61776d0eeeb257600b0099cf0c7533ae9a6856d31e4665"),
    ("timm", "1.0.31", "timm-1.0.31-py3-none-any.whl", "5bd50f7d0fe6d09bf9285ac2523234a1b7e6bf075c0be3e7aed09139fcb617c7"),
    ("torchmetrics", "1.9.0", "torchmetrics-1.9.0-py3-none-any.whl", "bfdcbff3dd1d96b3374bb2496eb39f23c4b28b8a845b6a18c313688e0d2d9ca1"),
    ("torchtnt", "0.2.4", "torchtnt-0.2.4-py3-none-any.whl", "c9b738232090c5e3453f202b1feb45e23d5cd2f23a04ca8b53e9b28ad3755ddb"),
    ("verl", "0.9.1", "verl-0.9.1-py3-none-any.whl", "db6e6f2a8d9d5808d9ec32d357a42319fdc6967df688ff9d9810050f49bfdd14"),
    # Held out in the twenty-third session: reviewed after the changes the ten above led to,
    # to see how those carried to code nobody had looked at (docs/lint.md).
    ("ai2-olmo-core", "3.0.0", "ai2_olmo_core-3.0.0-py3-none-any.whl", "9006e75b51c05ef8d701826f5f45980672ebade86f8050e185ae26b4626b4ad5"),
    ("lightning-thunder", "0.2.6", "lightning_thunder-0.2.6-py3-none-any.whl",
     "7b0bb904e5a162b0a2b762ce4652e1ad993b467f45f714b159b78d3bc94e2b9c"),
    ("llamafactory", "0.9.5", "llamafactory-0.9.5-py3-none-any.whl", "10776e9b259798bf65f6c5343f6298f0302e92e9cd47472abe29eef69e286c6a"),
    ("llm-foundry", "0.22.0", "llm_foundry-0.22.0-py3-none-any.whl", "46f2ebd42a93d7a4c62011f502be2ca6f1b382792d1fc10cdc2bece8306c7ee4"),
    ("mmdet", "3.3.0", "mmdet-3.3.0-py3-none-any.whl", "2e23e291281ac57e7dccf8678e957da45fbe560ce78a1f5ded6afeccd3730f17"),
    ("mosaicml-streaming", "0.13.0", "mosaicml_streaming-0.13.0-py3-none-any.whl",
     "ebd5cf830c6603157bb0c15f76370328d862aa5412ef96cd75e3de56af69b72f"),
    ("ms-swift", "4.6.0", "ms_swift-4.6.0-py3-none-any.whl", "8888ca2b88681aeabffc981f289ffc3e4fa6e4da7f83e885114ec0edbe8d99ea"),
    ("torchao", "0.18.0", "torchao-0.18.0-cp310-abi3-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
     "6540b148e40ba81cbd4de86392225a076a1591146e9cebb099b3b234ba9feebe"),
    ("torchft", "0.2.0", "torchft-0.2.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
     "61be4719c9a96e208fe09f2bf194b51327cd5958278990926e7dea060fe34af9"),
    ("torchrl", "0.14.1", "torchrl-0.14.1-cp311-cp311-manylinux_2_28_x86_64.whl",
     "391279fb7fb09603f4c16dbc779d5c135ab5ed25810fb42159d70a7ff8126e1a"),
    # Added in the twenty-eighth session, never linted before: a fresh measure, linted with the
    # session's final build; all 7 findings were reviewed before any change was made for them
    # (too few to sample 40; docs/lint.md).
    ("allennlp", "2.10.1", "allennlp-2.10.1-py3-none-any.whl", "d840f2cb285ded77f48fbe5c8f52fe955dc48d4462cae2baf4668eca10dd42fb"),
    ("catalyst", "22.4", "catalyst-22.4-py2.py3-none-any.whl", "2ae086d653bb3e5becaaac90349ba72ee76f884f5be74f0917a42c5826c66583"),
    ("espnet", "202511", "espnet-202511-py3-none-any.whl", "4777fd8a121be9bfecd0db34fd8e14894a9b9dc8513db97d3bbded0c20ba886e"),
    ("fairchem-core", "2.24.0", "fairchem_core-2.24.0-py3-none-any.whl",
     "8f05ab0032e7accaaac3621da947420969441032b2c5830348848d90705c19a7"),
    ("lerobot", "0.4.4", "lerobot-0.4.4-py3-none-any.whl", "e53800ead8216861540ad3aebaf12e3cf87a399b3c1f234eeead33716c9c24fd"),
    ("mmpretrain", "1.2.0", "mmpretrain-1.2.0-py2.py3-none-any.whl", "96156327c509cbf17fdc5867f7bc89142df6f63be38ecd67e91b41dc5e538933"),
    ("mmsegmentation", "1.2.2", "mmsegmentation-1.2.2-py3-none-any.whl",
     "dadf62bba00a65947d71b08471bc1fe2fee8e2d6eb740381eecd03991e204b47"),
    ("monai", "1.6.1", "monai-1.6.1-py3-none-any.whl", "dbd3b1dd309e752e0477ed73fde03b92f80ac74bfb8a8c4260f018b5d6ab2b0b"),
    ("speechbrain", "1.1.2", "speechbrain-1.1.2-py3-none-any.whl", "9fea4144c917ea58bcf13f17a1a1759179ed7472a30ec8416e7c7c8cf21d9c9a"),
    ("torch-geometric", "2.8.1", "torch_geometric-2.8.1-py3-none-any.whl",
     "b628de243c0893f3435b6eca9a7bbc07f3219293ed27c974b8929aaae42e65d0"),
    ("ultralytics", "8.4.190", "ultralytics-8.4.190-py3-none-any.whl", "bd309728efa168af64d39040136828edd2dbcb4aeceb4510bdff4f3ca0ea01b8"),
    ("xtuner", "0.2.0", "xtuner-0.2.0-py3-none-any.whl", "5b59e7e194d78579c3d00a9a68ea7195472869d7a4601d692ce200224ac86443"),
    # Added in the twenty-eighth session's second pass, never linted before: a fresh measure
    # of the attribute, single-process and version-probe changes; every finding reviewed before
    # any change was made for them (docs/lint.md).
    ("fastai", "2.8.12", "fastai-2.8.12-py3-none-any.whl", "50474575768679ba7352bebd0fdf8e7d2c4ddc10242455bec79a19c964f03fd0"),
    ("lightly", "1.6.0", "lightly-1.6.0-py3-none-any.whl", "f1564244cec0a4d2a5206f818e9de90d5869becbcfcb4a8ef0d78ba61c5b9071"),
    ("mmpose", "1.3.2", "mmpose-1.3.2-py2.py3-none-any.whl", "70a77b4e5fc96a9295012ab0505b975f192b22372b2f59e3110200c1462576b6"),
    ("pyannote-audio", "4.0.7", "pyannote_audio-4.0.7-py3-none-any.whl", "852ea15c4d85bc34773e618267603ffca6a521669a74d33742692cc67fc700d6"),
    ("pytorch-metric-learning", "2.9.0", "pytorch_metric_learning-2.9.0-py3-none-any.whl",
     "d51646006dc87168f00cf954785db133a4c5aac81253877248737aa42ef6432a"),
    ("rfdetr", "1.11.2", "rfdetr-1.11.2-py3-none-any.whl", "2f23589567123b59302f1cfa9d14d23630f9f583ee6f3468c5891e33fb103b2a"),
    # Added in the twenty-ninth session, never linted before (first fresh measure, seed 2929):
    # the sample was drawn before any finding was read, and judged before any change (docs/lint.md).
    ("nemo-toolkit", "3.0.0", "nemo_toolkit-3.0.0-py3-none-any.whl",
     "f1d8238e35909464cf426e5792af3113a7060de419f194b83bedd81cbe909394"),
    ("super-gradients", "3.7.1", "super_gradients-3.7.1-py3-none-any.whl",
     "f4ebf2f551399f77070609da15efb2cfaf90392a38be4be8b1d4eab0d9c47381"),
    ("s3prl", "0.4.18", "s3prl-0.4.18.tar.gz", "b59dcb12c434edc969b0b0290d4059c3a5c661adecc31db81ed9c510cd7f405e"),
    ("trainer", "0.0.36", "trainer-0.0.36-py3-none-any.whl", "d986702c6d6d988e74a4f8da0f9c11a8c7d89274a11436957e91217a19b487a6"),
    ("coqui-tts", "0.28.0", "coqui_tts-0.28.0-py3-none-any.whl",
     "dc50125980cf17ec859ad34fda725028b164d18dbbd96de45bde4c6bb4e6ceb5"),
    ("rl-games", "1.6.5", "rl_games-1.6.5-py3-none-any.whl", "bedc7897d500e33253442ff91c6b7417c8dc74fb994242b011c7cde33a0db3a2"),
    ("skrl", "2.1.1", "skrl-2.1.1-py3-none-any.whl", "ef39a87ef2f34fc1c4963a0b2b56022add7c6b29937bcbc63d2f4c37a8c46c00"),
    ("rsl-rl-lib", "5.5.1", "rsl_rl_lib-5.5.1-py3-none-any.whl",
     "bdb6382e21c62ddc2b47a37f39318486d0dfde234c7d446bfd42be482ecbd6ea"),
    ("mace-torch", "0.3.16", "mace_torch-0.3.16-py3-none-any.whl",
     "b80407edf6b2a1ec8523668c2a36852d20927ce1c3c56b70983a9f2dc53233ad"),
    ("instructlab-training", "0.16.2", "instructlab_training-0.16.2-py3-none-any.whl",
     "af3eece2b07691435b41dcc84e0bcd8e0dd8ec8a44cb7de726838a737b2b78b7"),
    ("lm-eval", "0.4.13", "lm_eval-0.4.13-py3-none-any.whl", "5daaa1973bf874005f64f28d3834b875f6886f0d6475878e6a6c821994a5286a"),
    ("salesforce-lavis", "1.0.2", "salesforce_lavis-1.0.2-py3-none-any.whl",
     "489782efc2d98d8e878112b2758f82ac2e6c10dfcfa087db6656465c7784d49f"),
    ("mmagic", "1.2.0", "mmagic-1.2.0-py2.py3-none-any.whl", "efa91041097c40e452dd2037b596a5633a6a512447c28a71c970c24aca04039c"),
    ("funasr", "1.4.16", "funasr-1.4.16-py3-none-any.whl", "f95943f6a8111349a1b08907363b048a49e9cb9caa1e3afd8c92970d08bf450d"),
    ("flair", "0.15.1", "flair-0.15.1-py3-none-any.whl", "3b6b793f2380cd618e988e7b16fbadcec6502aaa8f11a0890390160303aed553"),
    ("k-diffusion", "0.1.1.post1", "k_diffusion-0.1.1.post1-py3-none-any.whl",
     "b4bdcc74e35dd66df5d25433ea76b19edeaeaf2aad05ed97438be447cf4f5ee1"),
    ("denoising-diffusion-pytorch", "2.3.4", "denoising_diffusion_pytorch-2.3.4-py3-none-any.whl",
     "1f779c01c9b77e45a63f2e6cd54c0e8e8bd6725f564a44fe3ee15795ef5bded2"),
    ("horovod", "0.28.1", "horovod-0.28.1.tar.gz", "92a43f5a94c43907a56805bad15f19700c62ffc83b7ca483f9e104e229f67ef0"),
    ("lhotse", "1.33.0", "lhotse-1.33.0-py3-none-any.whl", "8697bc74a8f3101594fca5661c7318c30899f3fdb132a44c7e99e794be6ac061"),
    ("pytorchvideo", "0.1.5", "pytorchvideo-0.1.5.tar.gz", "69a3424c7feb70422da59d0cec17b56657984bd0ba8d5d78cad08a328cf6341b"),
    ("nequip", "0.19.1", "nequip-0.19.1-py3-none-any.whl", "904823a6768f6dde87d1d1dbb1b5b1a25b3ae17a18fa62800a2ed3aa6f7dea4d"),
    ("yolox", "0.3.0", "yolox-0.3.0.tar.gz", "1b8ee68846434408c40074f0806259fe3b9387181e562dbc435ea666533d8d08"),
    ("optimum-habana", "1.21.2", "optimum_habana-1.21.2-py3-none-any.whl",
     "78dca057f747981cffbdfd7f6ada3382c9b26ace2a272427e9675f591e2b2c53"),
    # Added in the twenty-ninth session after its changes, never linted before (second fresh
    # measure, seed 2930): drawn before any finding was read (docs/lint.md).
    ("oumi", "0.9", "oumi-0.9-py3-none-any.whl", "607ee5223b5cfe9db1ba58f7a2fbdcac6e1f950db8875c4cfa03f0e2efb20e30"),
    ("modelscope", "1.40.2", "modelscope-1.40.2-py3-none-any.whl",
     "ea03e0ec4a73398a488d3d240cda4f0c5b62390377a134756d4074a3036cb909"),
    ("sevenn", "0.13.0", "sevenn-0.13.0-py3-none-any.whl", "9378f7df2b75fe83274483a5f804790ae1023dd22ddeb6a48c1a03de97e22620"),
    ("mmaction2", "1.2.0", "mmaction2-1.2.0-py2.py3-none-any.whl",
     "4697af11801a7e7b45700a1d21cb27afb5350b28718c31ca19b65a927fde1614"),
    ("mmocr", "1.0.1", "mmocr-1.0.1-py2.py3-none-any.whl", "772924e3ac8fb8b76443a70e7b8b41e12d16b22951d34daf41ec195cd2c197bf"),
    ("mmdet3d", "1.4.0", "mmdet3d-1.4.0-py3-none-any.whl", "ef5fc90ee2defff21ee76d45ef0adb8cf719ae1f19b111d0595ac0d978c5fdda"),
    ("mmyolo", "0.6.0", "mmyolo-0.6.0-py3-none-any.whl", "fc6eac828cfecb43ad3c3b7d39f50c79cacbd894e78fe1ac9bd3c8c4eebc659d"),
    ("ludwig", "0.17.10", "ludwig-0.17.10-py3-none-any.whl", "9bb75122f32fd5d1c53ea04125a4a16c26a18da0dd71347a7ba248ab1fe53276"),
    ("imagen-pytorch", "2.1.0", "imagen_pytorch-2.1.0-py3-none-any.whl",
     "e3767c0bf59e54607e73a9cbdad6989f9db4dbef5a05f0e55262cc911fe18475"),
    ("dalle2-pytorch", "1.15.6", "dalle2_pytorch-1.15.6-py3-none-any.whl",
     "d77224994ccc005a7e2170c0d80e54333e3826613bf31f010d9faba6a0cf8594"),
    ("unsloth", "2026.10.9", "unsloth-2026.10.9-py3-none-any.whl",
     "feb40b99bc4f8c543a36cbd0fe6e1410d6e4ac16bd4d0c731f607adce3d63bb0"),
    ("liger-kernel", "0.8.5", "liger_kernel-0.8.5-py3-none-any.whl",
     "60789cd576af073ab9b192b570d2597fd0cdad489cd62fb44fb16256d43754c9"),
    ("schnetpack", "2.2.0", "schnetpack-2.2.0-py3-none-any.whl",
     "b06cb31093c7b6771812bad29466cf018150b0c8061f9826dfe5a85ced5d3cca"),
    ("boltz", "2.2.1", "boltz-2.2.1-py3-none-any.whl", "b8c62bbdede1922931d9203118f62c858f11aa699bf91fd4c05a5ed6a6d8b4fc"),
    ("anomalib", "2.7.0", "anomalib-2.7.0-py3-none-any.whl", "8b31490815670549a3901068addd0306856c174c032ba93388e7b37b90219332"),
    ("lightning-bolts", "0.7.0", "lightning_bolts-0.7.0-py3-none-any.whl",
     "231c91584ffd610499fb5be80b9f5a22cfa42c3377d16223a37984e59d0118bd"),
    ("sample-factory", "2.1.1", "sample_factory-2.1.1-py3-none-any.whl",
     "4acaef95c3790f4328bf839e07631737879f3c6409d22ee6e5d67635db8482a7"),
    ("nvidia-modelopt", "0.47.0", "nvidia_modelopt-0.47.0-py3-none-any.whl",
     "db13e62d7efe4a1512e8b8c3f479e28d64022306f94a194f13234e7dca1d3120"),
    ("determined", "0.38.1", "determined-0.38.1-py3-none-any.whl",
     "22883b24c642afe2ebadc569cbe54b4c576571a97410987bac2eb1a46d3af7c0"),
    ("mmcv", "2.2.0", "mmcv-2.2.0.tar.gz", "ac479247e808d8802f89eadf04d4118de86bdfe81361ec5aed0cc1bf731c67c9"),
    ("audiocraft", "1.3.0", "audiocraft-1.3.0.tar.gz", "d82ade3eb4f934ee1adb438ae687a2bf59d33ca4a20039beab072548c038ac80"),
    ("pytorch-accelerated", "0.1.61", "pytorch_accelerated-0.1.61-py3-none-any.whl",
     "6335954b04b4e0b124f1bfe18ae88e3eb4b59f075178e531da9e0e5c5e0f7534"),
    ("open-flamingo", "2.0.1", "open_flamingo-2.0.1-py3-none-any.whl",
     "df55893ef74a0691f7ce54592c1ca155a8e246160e2a658086031bf6b5eddbc8"),
    ("fms-hf-tuning", "3.2.2", "fms_hf_tuning-3.2.2-py3-none-any.whl",
     "fe5eada1e3504fbeb652083e9b8561e5b076a9b69f8b84fbb07a18a194d3a58a"),
    ("llmcompressor", "0.14.0.1", "llmcompressor-0.14.0.1-py3-none-any.whl",
     "fedc804a45bf3e353b84b8181147474c324ffba3356c9ecebceae29dfc3c5f00"),
    ("verifiers", "0.4.0", "verifiers-0.4.0-py3-none-any.whl",
     "cf73b3089c12ff1e2471130153cfa93cfe9beb8b49abfb2ceb917658d99fefe2"),
    ("trinity-rft", "0.6.0", "trinity_rft-0.6.0-py3-none-any.whl",
     "51ac0d789ccedbdd0578372dc45fd1480c6e5dfe53632ffd451feed827d0a6da"),
    ("neuralforecast", "3.3.0", "neuralforecast-3.3.0-py3-none-any.whl",
     "df16b46ec2e3c3a494047ebe1996c6f4456e176daedc01ab508fbc569f722d45"),
    ("gluonts", "0.17.0", "gluonts-0.17.0-py3-none-any.whl", "811baf619b1002daa82afabc4911ded217b369a4dcbbbbf0e5d3f7876650bcd3"),
    ("hivemind", "1.1.12", "hivemind-1.1.12.tar.gz", "11750accdc82421f3b37a920b8fb745d3e5add0187a774f7f217b46fa74fa984"),
    # Added in the thirtieth session, never linted before (third fresh measure, seed 3030): pinned
    # before any of them was linted; the sample is drawn with the session's final build before any
    # finding is read (docs/lint.md).
    ("alphafold3-pytorch", "0.8.3", "alphafold3_pytorch-0.8.3-py3-none-any.whl", "9669c457741b5ff10802e98001894183e0f213463ac869fabea42fd4f5e35c98"),
    ("areal", "1.0.4", "areal-1.0.4-py3-none-any.whl", "7d7cfab10d9ec0990d9263290a9472366827783b9ad5fce22f56a1add416bdd9"),
    ("asteroid", "0.7.0", "asteroid-0.7.0-py3-none-any.whl", "ea97a24901d9d9851b4a594171bd7c6dd900fee2c132b9ce045aa09926d489c7"),
    ("audiolm-pytorch", "2.4.0", "audiolm_pytorch-2.4.0-py3-none-any.whl", "d6e41d41c2b6694ddbe19c6de92650b5333f01aad217255f8e42784817a08344"),
    ("autogluon-multimodal", "1.6.3", "autogluon_multimodal-1.6.3-py3-none-any.whl", "97d69abaee07ba59012938254056b73c7da24dc16a8936ff9f4b003871dfbbd6"),
    ("bagua", "0.9.2", "bagua-0.9.2.tar.gz", "fdf401ed3bc85ba856d6a9c63e7aacb7b67cfdd9c95f2ae32c1517d2150438f0"),
    ("classy-vision", "0.7.0", "classy_vision-0.7.0-py3-none-any.whl", "6fd8680b183f5d36119092980b8a27b4ec02448242ea8674edfbd7de91cc7f16"),
    ("cleanrl", "0.4.8", "cleanrl-0.4.8.tar.gz", "947a5b4c006f43cf90be03b90c5345d118468260c7269c11e5d795954a2effa5"),
    ("colbert-ai", "0.2.22", "colbert_ai-0.2.22-py3-none-any.whl", "b829f0a26ba6cdb31c890fa136dd4aade20c5e03372e43cd3b5121466545e413"),
    ("deepchem", "2.8.0", "deepchem-2.8.0-py3-none-any.whl", "042c7639770e69b127f3df5e5bdf139893caa1706d512893d78728fd0a2de8b0"),
    ("e2-tts-pytorch", "2.2.2", "e2_tts_pytorch-2.2.2-py3-none-any.whl", "7ac98d3daf1512723e163f0208096a1b877660428540e660d11f805084a3ed1a"),
    ("f5-tts", "1.1.22", "f5_tts-1.1.22-py3-none-any.whl", "f0505dfb5463645caa526bace346ed1c89bcc9acb9ef42fdffd56c2c4c0a09d1"),
    ("fair-esm", "2.0.0", "fair_esm-2.0.0-py3-none-any.whl", "7dcb58828a401155d1457d071a03800bd1a50331ddf24ac79ad1dd0f2ea682a2"),
    ("flagembedding", "1.4.2", "flagembedding-1.4.2-py3-none-any.whl", "35e33a08e8ed5e299eabbe3bc23518eb66a424dd29ee08fb3802bf9aef9e9bf2"),
    ("fschat", "0.2.36", "fschat-0.2.36-py3-none-any.whl", "a66ecf1e90f6db1d015096f6aa8a305d20d0a13e067951285aecdb56a33e9cb1"),
    ("lighteval", "0.13.0", "lighteval-0.13.0-py3-none-any.whl", "2552944f09e90680394f051bc109ca951cff694002ac3365c99fd6b6bb394dcf"),
    ("lightning-habana", "1.6.0", "lightning_habana-1.6.0-py3-none-any.whl", "d9911562c0c3f82ee4716350ca7231cce9791683b647e1ff7bc69c2626f080fb"),
    ("litdata", "0.2.76", "litdata-0.2.76-py3-none-any.whl", "3693411b6b7f26ef0781823f048d18f56f8a3f895d063c9e8c9d29836cebaaf5"),
    ("llm2vec", "0.2.2", "llm2vec-0.2.2-py2.py3-none-any.whl", "86002770fed5e77b731ddd93962ec4cff58e6b21c69ebe4f536491019535e656"),
    ("lmms-eval", "0.7.3", "lmms_eval-0.7.3-py3-none-any.whl", "5709f9f9f56a8f5f22bf379571bd1c5e7702af5ae2bbb9637001c5dd91168895"),
    ("magvit2-pytorch", "0.5.1", "magvit2_pytorch-0.5.1-py3-none-any.whl", "65b5c6288f205521a66f40a31ff14d6bb405ea7a1a6b3f9b342eaac0136ecc68"),
    ("matgl", "4.1.2", "matgl-4.1.2-py3-none-any.whl", "d79fca8825f37ee5e85264cc34724f49b44d32f22439ace580680a714464831c"),
    ("mattersim", "1.2.3", "mattersim-1.2.3-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "8dfa718f8b02a8d49e76a3b261caa9059c4bfcf40ef33d8bca9485fac4292034"),
    ("megatron-energon", "7.4.1", "megatron_energon-7.4.1-py3-none-any.whl", "b2d96756f2825750bf51a2b2c16bd1ddfed8f50414b72bb9da174dd8ddafb7d8"),
    ("meshgpt-pytorch", "1.8.1", "meshgpt_pytorch-1.8.1-py3-none-any.whl", "08a8cfecd705902906538da3a82ee580638b5bd6a33f627da04d8fcdc54e7ecf"),
    ("mmf", "1.0.0rc10", "mmf-1.0.0rc10.tar.gz", "bc71491b31928df6a39c1226263c0a6a47341000f26d2a3137d78de2ea653b76"),
    ("mmrazor", "1.0.0", "mmrazor-1.0.0-py2.py3-none-any.whl", "d542a78697fa7a4ec6a5a052b232131ba5e2d150afff11db52709d2054508eaa"),
    ("mmrotate", "0.3.4", "mmrotate-0.3.4-py3-none-any.whl", "812f5232b563b44132f2ebffa0255577b1e6598c1ae8f23fa34eea789fdbdd04"),
    ("mmselfsup", "1.0.0", "mmselfsup-1.0.0-py3-none-any.whl", "0c892276fd9537a1a45bd724fa6794a0ed4246a84d0d18847d0948105d784bcb"),
    ("musiclm-pytorch", "0.2.8", "musiclm_pytorch-0.2.8-py3-none-any.whl", "e4630a418166f5c73aaf406a167914bbd95d33c5b5e775d8f77a4a96df8ef721"),
    ("naturalspeech2-pytorch", "0.1.8", "naturalspeech2_pytorch-0.1.8-py3-none-any.whl", "34b1cd3cd4b32dc678df1253fec5bff873122283e5125431932bcf07611064d9"),
    ("nemo-aligner", "0.7.0", "nemo_aligner-0.7.0-py3-none-any.whl", "1a9c84e4685fda96325de7b5ab181c6cfffe0f2b21f50c2bde8d9c2135669b6e"),
    ("neuraloperator", "2.0.0", "neuraloperator-2.0.0-py3-none-any.whl", "2f4edf579057a100d03a5d8728c145bd114e6da77563fa9f8c8f7c213784d265"),
    ("nvidia-physicsnemo", "2.2.2", "nvidia_physicsnemo-2.2.2-py3-none-any.whl", "c447771384d92f5c31547e293f65b70e0947f8829981f34c7e8300daf1b8d2eb"),
    ("opacus", "1.6.0", "opacus-1.6.0-py3-none-any.whl", "342123624c56c09d47eaba44010ed216d51c63132b543d67cba53a49ed6dc41e"),
    ("opencompass", "0.5.4", "opencompass-0.5.4-py3-none-any.whl", "362aafb77b264d9eb51e4a8f6730d22c98ea93a8d73f5f1be56928ed3141474a"),
    ("optimum-neuron", "0.4.5", "optimum_neuron-0.4.5-py3-none-any.whl", "fde44f493e73e0bd558ba03f20034db05e7777db865de343c528538afd98ffa9"),
    ("parlai", "1.7.2", "parlai-1.7.2-py3-none-any.whl", "b953b9748b6e53f909edae43f9c0167fb1eb1b7a2db86a9ec7327d693406fb5e"),
    ("pufferlib", "2.0.2", "pufferlib-2.0.2-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "18c5e74f9a7790aad4bffe223f4de79d363cb6a8b7e3e9988d5bf6a525e0e3a5"),
    ("pylate", "1.6.0", "pylate-1.6.0-py3-none-any.whl", "4048c7eda307f5915963fa52dbef4799624b3f774de5e53a66425cc0043fc25a"),
    ("python-doctr", "1.1.0", "python_doctr-1.1.0-py3-none-any.whl", "828148045bdb7b3eb8d861864f1877cf3be3ec5fe3b0e15db353cb75d82fe0a6"),
    ("pytorch-forecasting", "1.8.0", "pytorch_forecasting-1.8.0-py3-none-any.whl", "d77ad9a86a310513b3835570f2119200d7a8818fe6acf42106bb97dbba66dfff"),
    ("pytorch-tabular", "1.2.0", "pytorch_tabular-1.2.0-py3-none-any.whl", "0a59f8a2304856b3d1e905f7b66153ebc65df1a6a017f2c8a13a29f62dc95b26"),
    ("ray", "2.60.0", "ray-2.60.0-cp311-cp311-manylinux2014_x86_64.whl", "e227f6b2af8ab4626dd9a35a5860b33864325ea137383d57f854d4637ee3fea2"),
    ("setfit", "1.2.0", "setfit-1.2.0-py3-none-any.whl", "dcf9292f073f47252c3fea73b141c4f43dc1d01789e0c8e2de017337e0428e34"),
    ("sglang", "0.5.23", "sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl", "00b3cd5b265ac76c64185fbb6b95424f324ddd9f428d0306b77bc9db9d859937"),
    ("simpletransformers", "0.70.8", "simpletransformers-0.70.8-py3-none-any.whl", "853b56658a0e6a48ab78cd40d47bfd19d1f15728297fb0ee18d7eaac80456bad"),
    ("soundstorm-pytorch", "0.6.1", "soundstorm_pytorch-0.6.1-py3-none-any.whl", "831ee3e50bcf10d6b6c4d76976c154bdc8659b67f4da8a7111ef2e54eb9954c2"),
    ("tevatron", "0.1.0", "tevatron-0.1.0-py3-none-any.whl", "1d3e120dc0d32480a5c14ff2b887ea93eead996d4f6c270920ec28a9484185ac"),
    ("tianshou", "2.0.1", "tianshou-2.0.1-py3-none-any.whl", "08d0fbcf6055805aeeeb2eaf357c1e21462793c80c700f0d3996251afada05df"),
    ("torch-harmonics", "0.9.3", "torch_harmonics-0.9.3-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl", "4c85df1c6aca1d8beb39879cf7adb34248d1bd1979dbe32155bc5d2abd0d3396"),
    ("torchdistill", "1.1.5", "torchdistill-1.1.5-py3-none-any.whl", "fc95f6f877aad22a2b7c3476677ba0df80aa91961efc02afb5a53c8f27f123d9"),
    ("torchgeo", "0.8.1", "torchgeo-0.8.1-py3-none-any.whl", "3119f455bff1920c3fe7b83aa4382d93298ee0cea706e954234b8efd2719ec5f"),
    ("torchmd-net", "2.4.10", "torchmd_net-2.4.10-cp311-cp311-manylinux_2_28_x86_64.whl", "2a674eb41ad886a39599e86054dd66c5cd64ec60515790e3e20e40ea0fa90447"),
    ("torchpippy", "0.2.0", "torchpippy-0.2.0-py3-none-any.whl", "1908beff329a3d9af99e9fa8e1aecbaa110d16cba2d337bebbafee23c8ffc7c8"),
    ("torchsnapshot", "0.1.0", "torchsnapshot-0.1.0-py3-none-any.whl", "8f61b6abf587fc72dd81099317fa46d89552536ef6aee611e37771548bdc9e68"),
    ("torchx", "0.7.0", "torchx-0.7.0-py3-none-any.whl", "815c2628c30de1f5938c14c4427cfe280fdf93473b171be906ab7c1ea5971824"),
    ("vector-quantize-pytorch", "1.32.0", "vector_quantize_pytorch-1.32.0-py3-none-any.whl", "4c896ebe38a584f31da5ce747c9d95ddf26b178cfc751dcbc844841a93282ed5"),
    ("voicebox-pytorch", "0.5.0", "voicebox_pytorch-0.5.0-py3-none-any.whl", "6bb6208c0c65c19a07fcf836cd91d53263f1c9a751701a5219911446aa64546e"),
    ("x-clip", "0.14.4", "x_clip-0.14.4-py3-none-any.whl", "2e9842330bc4539916e54a22c1d4352b60b838507e0736e98e4fb74fd9972f7a"),
    # Fourth fresh measure (thirty-second session), never linted before (seed 3232): pinned before
    # any of them was linted; the sample is drawn once, before any finding is read (docs/lint.md).
    # dgl publishes no sdist and no Linux wheel on PyPI: its cp311 Windows wheel holds the same
    # Python sources (only unpacked, never installed).
    ("bmtrain", "1.0.1", "bmtrain-1.0.1.tar.gz", "45ac59e2e9fb10ca7aab2647fbe19d99ed22d1a7ecd27fdc35c31ab4fa562bfb"),
    ("deepspeed-mii", "0.3.3", "deepspeed_mii-0.3.3-py3-none-any.whl", "392fd7df5fe9f8dbbca3e27f99a0f56bd716c9ef4f4e4b8e58a0c86e69c82b2f"),
    ("dgl", "2.2.1", "dgl-2.2.1-cp311-cp311-win_amd64.whl", "343ca8d375a15aa6b50a72314ec11529b9f9467a34c29281c76a4762e6b326fe"),
    ("esm", "3.4.3", "esm-3.4.3-py3-none-any.whl", "b9b59f2ffc381cbcd77a20859d0f680edc72da976598f6325daec7af632dafb1"),
    ("fvcore", "0.1.5.post20221221", "fvcore-0.1.5.post20221221.tar.gz", "f2fb0bb90572ae651c11c78e20493ed19b2240550a7e4bbb2d6de87bdd037860"),
    ("galore-torch", "1.0", "galore_torch-1.0-py3-none-any.whl", "7339bd6f6ea4557c5c9ae58026d67414bba2a0c7a7e7f1d69a05514ff565dd20"),
    ("lightning-flash", "0.8.2", "lightning_flash-0.8.2-py3-none-any.whl", "073504754f2620c5129a05fbcae8fb71d047590ba19d009c4d9f8ea355d10536"),
    ("lightning-ir", "0.0.6", "lightning_ir-0.0.6-py3-none-any.whl", "9566c2e2fc1a5a5ed0148c385a634565f7408f6853080a6316fea9423bf23193"),
    ("llama-recipes", "0.0.5.post2", "llama_recipes-0.0.5.post2-py3-none-any.whl", "3d8123defb537d2533a47e16bb0d9adf8467ecebbfd8d5675a8957b8a974066d"),
    ("lmdeploy", "0.18.0", "lmdeploy-0.18.0-cp311-cp311-manylinux_2_28_x86_64.whl", "e6790a25dcdb0345c160567fdf2ac604fec319389523a8b806834c9d92c8ffe1"),
    ("megablocks", "0.10.0", "megablocks-0.10.0.tar.gz", "956fd9880fa869f7468da125da230733d5f84e10a9f8c2991e5e16523c6fe1e0"),
    ("mmtrack", "0.14.0", "mmtrack-0.14.0-py3-none-any.whl", "068cec2df143f6ca420bb8c9df3f6f4e8943dea543c43bcee6fdf9fc668d5208"),
    ("nemo-run", "0.11.1", "nemo_run-0.11.1-py3-none-any.whl", "837790206137f0da47986fedce8d4db45e19970c4835ee09ec6f0fc4c60f80be"),
    ("nnunetv2", "2.8.1", "nnunetv2-2.8.1-py3-none-any.whl", "58aeb5719c9ee7bdac4b420106940cf3b21ea08a28a494802b0921ca14fde63f"),
    ("optimum", "2.3.0", "optimum-2.3.0-py3-none-any.whl", "3e9b217b4ab21fd4cf894a987002ee7d3626114e009592babf084c2f1a0f3b5f"),
    ("petals", "2.2.0.post1", "petals-2.2.0.post1-py3-none-any.whl", "2d8f24bfe0938ae31414dc27593103816b79731a4b78dbcbbb5719ad054dfc5b"),
    ("pytorch-lightning-spells", "0.3.0", "pytorch_lightning_spells-0.3.0-py3-none-any.whl", "c0fb6a1ea4701a290b1b8df7407517ec03383b83878b97907b78fc1f0c7b6ec1"),
    ("pytorch-pfn-extras", "0.9.0", "pytorch_pfn_extras-0.9.0-py3-none-any.whl", "309ff891c8efb73e54f70a5be2a1f4826633796289a0be59aa316c9f85542655"),
    ("ring-flash-attn", "0.1.8", "ring_flash_attn-0.1.8-py3-none-any.whl", "296c929516c3b21f7bcdaeca44a99bb541779a7b63979eb0f67837dcb18a2bb9"),
    ("tensordict", "0.15.3", "tensordict-0.15.3-py3-none-any.whl", "a437693bfc103d6ce1a76aa16b18c7324289986a9516c4592f15c0c86bd6ecfb"),
    ("torchdata", "0.11.0", "torchdata-0.11.0-py3-none-any.whl", "52b940fbbe0e00fb21cabddf528449d1bec5bfb0d0823b7487b15f951658ee33"),
    ("torchmonarch", "0.7.0", "torchmonarch-0.7.0-cp311-cp311-manylinux2014_x86_64.whl", "7959f93a26856ef1651a48afb37969aadb608f3b46d3c681483111c28cae57c8"),
    ("transformer-engine", "2.20.2", "transformer_engine-2.20.2-py3-none-any.whl", "7dcfad943a1a55b2612db9a0e43697fe98c70f4c42ec391ba3a0f872f6ce2094"),
    ("vllm", "0.33.0", "vllm-0.33.0.tar.gz", "f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112"),
    ("xfuser", "0.7.0", "xfuser-0.7.0-py3-none-any.whl", "873a76402e7423d0382375886acf7ceabe6ba10183e8249b529f02251d13c0cd"),
    ("yunchang", "0.6.4", "yunchang-0.6.4-py3-none-any.whl", "cce4295058e9de2c0592d69cfe1e3e679711def5f315fd1b68dbed2d54bc9255"),
]

# Directories `desync lint` skips when walking (docs/lint.md), so line counts match its work.
SKIPPED_DIRS = {".git", "venv", ".venv", "site-packages", "__pycache__", "node_modules", ".tox", ".nox",
                ".mypy_cache", ".pytest_cache", ".ruff_cache"}


@dataclass
class Source:
    package: str
    version: str
    root: Path            # the directory linted; finding paths are relative to it
    targets: list[str]    # paths under root given to `desync lint`


@dataclass
class Run:
    source: Source
    findings: list[dict]
    files: int
    lines: int
    cpu_s: float
    wall_s: float
    indirect_hidden: int = 0


# ---------------------------------------------------------------------------- sources

def cache_dir() -> Path:
    env = os.environ.get("DESYNC_LINT_BENCH_CACHE")
    return Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "desync" / "lint-bench"


def download(name: str, filename: str, sha256: str, dest: Path) -> Path:
    """The archive `filename` of PyPI project `name`, fetched once into `dest` and verified."""
    path = dest / filename
    if path.exists() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256:
        return path
    req = urllib.request.Request(INDEX.format(name=name), headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        files = {f["filename"]: f for f in json.load(resp)["files"]}
    if filename not in files:
        raise SystemExit(f"{filename} is not on PyPI's index for {name}")
    print(f"  downloading {filename}", file=sys.stderr)
    with urllib.request.urlopen(files[filename]["url"], timeout=300) as resp:
        data = resp.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise SystemExit(f"{filename}: sha256 {digest} does not match the pinned {sha256}")
    dest.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(path)
    return path


def unpack(archive: Path, into: Path) -> Path:
    """Unpacks a wheel or sdist once; only regular files, no paths outside `into`."""
    done = into / ".unpacked"
    if done.exists():
        return into
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.infolist():
                target = (into / member.filename).resolve()
                if member.is_dir() or not target.is_relative_to(into.resolve()):
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(member))
    else:
        with tarfile.open(archive) as tf:
            tf.extractall(into, filter="data")
    done.touch()
    return into


def torch_distributed() -> Source | None:
    try:
        venv = subprocess.run([str(REPO / "scripts" / "venv.sh")], capture_output=True, text=True,
                              check=True, timeout=3600).stdout.strip()
    except (subprocess.CalledProcessError, OSError) as err:
        print(f"  skipping torch.distributed: scripts/venv.sh failed ({err})", file=sys.stderr)
        return None
    torch_dir = next(Path(venv).glob("lib/python3*/site-packages/torch"), None)
    if torch_dir is None:
        return None
    version = "unknown"
    for line in (torch_dir / "version.py").read_text().splitlines():
        if line.startswith("__version__"):
            version = line.split("=", 1)[1].strip().strip("'\"")
    # Lint from site-packages so paths read torch/distributed/..., like the other packages.
    return Source("torch", version, torch_dir.parent, ["torch/distributed"])


def local_sources() -> list[Source]:
    out = []
    scenarios = sorted(p.relative_to(REPO / "tests" / "scenarios").as_posix()
                       for p in (REPO / "tests" / "scenarios").glob("*/src"))
    if scenarios:
        out.append(Source("desync-scenarios", "local", REPO / "tests" / "scenarios", scenarios))
    ext = Path(os.environ.get("DESYNC_EXTERNAL_CASES", REPO.parent / "shared" / "external-cases" / "cases"))
    cases = sorted(p.relative_to(ext).as_posix() for p in ext.glob("*/src")) if ext.is_dir() else []
    if cases:
        out.append(Source("external-cases", "local", ext, cases))
    else:
        print(f"  no external cases at {ext} (set DESYNC_EXTERNAL_CASES)", file=sys.stderr)
    return out


def sources(only: set[str] | None, local: bool = True) -> list[Source]:
    cache = cache_dir()
    out = []
    for name, version, filename, sha256 in PINNED:
        if only and name not in only:
            continue
        archive = download(name, filename, sha256, cache / "archives")
        out.append(Source(name, version, unpack(archive, cache / f"{name}-{version}"), ["."]))
    if not only or "torch" in only:
        if (src := torch_distributed()) is not None:
            out.append(src)
    if local:
        out += [s for s in local_sources() if not only or s.package in only]
    return out


# ---------------------------------------------------------------------------- linting

def count_lines(root: Path, targets: list[str]) -> int:
    total = 0
    for target in targets:
        for dirpath, dirnames, filenames in os.walk(root / target):
            dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith(".")]
            for f in filenames:
                if f.endswith(".py"):
                    with open(os.path.join(dirpath, f), "rb") as fh:
                        total += fh.read().count(b"\n")
    return total


# Extra `desync lint` flags for every run (`--include-indirect` from the command line).
LINT_FLAGS: list[str] = []


def lint(binary: Path, source: Source) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([str(binary), "lint", "--format", "json", *LINT_FLAGS, *source.targets], cwd=source.root,
                          capture_output=True, text=True, timeout=1800, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"desync lint on {source.package} exited {proc.returncode}: {proc.stderr[:2000]}")
    doc = json.loads(proc.stdout)
    findings = [dict(f, file=os.path.normpath(f["file"])) for f in doc["findings"]]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(source, findings, doc["files_checked"], count_lines(source.root, source.targets), cpu, wall,
               doc.get("indirect_hidden", 0))


# ---------------------------------------------------------------------------- reviews

def load_reviews(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("package") and not r["package"].startswith("#")]
    for r in rows:
        r["line"] = int(r["line"])
        if r["verdict"] not in VERDICTS:
            raise SystemExit(f"{path}: verdict {r['verdict']!r} for {r['file']}:{r['line']} is not one of {VERDICTS}")
        if r["seen"] not in ("yes", "no"):
            raise SystemExit(f"{path}: seen {r['seen']!r} for {r['file']}:{r['line']} is not yes/no")
    # One verdict per finding: two rows for one would be counted by whichever came last.
    keys = collections.Counter((r["package"], r["file"], r["line"], r["rule"]) for r in rows)
    twice = [k for k, n in keys.items() if n > 1]
    if twice:
        raise SystemExit(f"{path}: more than one verdict for {', '.join(f'{k[1]}:{k[2]} {k[3]}' for k in twice)}")
    return rows


def save_reviews(path: Path, rows: list[dict]) -> None:
    rows = sorted(rows, key=lambda r: (r["package"], r["file"], r["line"], r["rule"]))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r[k] for k in FIELDS})


def review_of(reviews: dict, package: str, finding: dict) -> dict | None:
    """The review of a finding: same file, line and rule, else the same file and line under
    another rule (the verdict is about the construct on that line, and rules get renamed)."""
    exact = reviews.get((package, finding["file"], finding["line"], finding["rule"]))
    if exact:
        return exact
    return next((r for (p, f, ln, _), r in reviews.items()
                 if p == package and f == finding["file"] and ln == finding["line"]), None)


def context(root: Path, file: str, line: int, radius: int = 6) -> str:
    try:
        lines = (root / file).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    lo, hi = max(1, line - radius), min(len(lines), line + radius)
    return "\n".join(f"{'>' if n == line else ' '}{n:6d}  {lines[n - 1]}" for n in range(lo, hi + 1))


# ---------------------------------------------------------------------------- report

def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f}%" if b else "n/a"


def report(runs: list[Run], reviews: list[dict]) -> tuple[dict, list[str]]:
    by_key = {(r["package"], r["file"], r["line"], r["rule"]): r for r in reviews}
    current = {(run.source.package, f["file"], f["line"], f["rule"]): (run, f) for run in runs for f in run.findings}
    present_at = {(p, f, ln) for (p, f, ln, _) in current}
    linted = {run.source.package: run.source.version for run in runs}

    # Precision is reported for real code (downloaded packages and torch) apart from the local
    # sources (the repository's scenarios and the external cases), whose findings are mostly
    # the bugs injected on purpose.
    per_rule = collections.defaultdict(collections.Counter)
    local = collections.Counter()
    unreviewed = []
    for (package, _, _, rule), (run, f) in sorted(current.items()):
        rev = review_of(by_key, package, f)
        verdict = "unreviewed" if rev is None else rev["verdict"]
        if rev is None:
            unreviewed.append((run, f))
        (local if run.source.version == "local" else per_rule[rule])[verdict] += 1

    failures, fixed_false, stale, known_misses, found_again = [], [], [], [], []
    for r in reviews:
        if r["package"] not in linted:
            continue
        if r["version"] != linted[r["package"]]:
            stale.append(r)
            continue
        here = (r["package"], r["file"], r["line"]) in present_at
        if r["verdict"] == "true" and r["seen"] == "no":
            (found_again if here else known_misses).append(r)
        elif r["verdict"] == "true" and not here:
            failures.append(f"reviewed true finding disappeared: {r['package']} {r['file']}:{r['line']} "
                            f"{r['rule']} ({r['reason']})")
        if r["verdict"] == "false" and r["seen"] == "no" and here:
            failures.append(f"reviewed false finding came back: {r['package']} {r['file']}:{r['line']} "
                            f"{r['rule']} ({r['reason']})")
        if r["verdict"] != "true" and r["seen"] == "yes" and not here:
            fixed_false.append(r)

    lines = sum(run.lines for run in runs)
    cpu = sum(run.cpu_s for run in runs)
    total = collections.Counter()
    for c in per_rule.values():
        total.update(c)
    reviewed = total["true"] + total["safe"] + total["false"]
    summary = {
        "packages": [{"package": run.source.package, "version": run.source.version, "files": run.files,
                      "lines": run.lines, "findings": len(run.findings),
                      "per_kloc": round(1000 * len(run.findings) / run.lines, 4) if run.lines else None,
                      "cpu_s": round(run.cpu_s, 3), "wall_s": round(run.wall_s, 3)} for run in runs],
        "rules": {rule: dict(c) for rule, c in sorted(per_rule.items())},
        "local": dict(local),
        "findings": sum(len(run.findings) for run in runs), "reviewed": reviewed,
        "indirect_hidden": sum(run.indirect_hidden for run in runs),
        "true": total["true"], "safe": total["safe"], "false": total["false"],
        "precision": round(total["true"] / reviewed, 4) if reviewed else None,
        "lines": lines, "cpu_s": round(cpu, 3), "lines_per_s_per_core": round(lines / cpu) if cpu else None,
        "unreviewed": [{"package": run.source.package, "file": f["file"], "line": f["line"], "rule": f["rule"]}
                       for run, f in unreviewed],
        "fixed_false_alarms": [{k: r[k] for k in ("package", "file", "line", "rule", "verdict")} for r in fixed_false],
        "known_misses": [{k: r[k] for k in ("package", "file", "line", "rule", "reason")} for r in known_misses],
        "found_again": [{k: r[k] for k in ("package", "file", "line", "rule")} for r in found_again],
        "stale_reviews": len(stale), "failures": failures,
    }
    return summary, failures


def print_report(summary: dict) -> None:
    print(f"{'package':<18} {'version':<22} {'files':>6} {'lines':>9} {'findings':>8} {'/kLOC':>7} {'cpu s':>7}")
    for p in summary["packages"]:
        print(f"{p['package']:<18} {p['version']:<22} {p['files']:>6} {p['lines']:>9} {p['findings']:>8} "
              f"{p['per_kloc'] if p['per_kloc'] is not None else '-':>7} {p['cpu_s']:>7}")
    print(f"\ntotal: {summary['lines']} lines, {summary['findings']} findings "
          f"({1000 * summary['findings'] / summary['lines']:.3f} per kLOC), "
          f"{summary['lines_per_s_per_core']} lines/s per core ({summary['cpu_s']} s CPU)")
    if summary["indirect_hidden"]:
        print(f"{summary['indirect_hidden']} more findings with indirect evidence not shown (--include-indirect)")
    print()
    print(f"{'rule':<8} {'true':>5} {'safe':>5} {'false':>6} {'unrev':>6} {'precision':>10}")
    for rule, c in summary["rules"].items():
        rev = c.get("true", 0) + c.get("safe", 0) + c.get("false", 0)
        print(f"{rule:<8} {c.get('true', 0):>5} {c.get('safe', 0):>5} {c.get('false', 0):>6} "
              f"{c.get('unreviewed', 0):>6} {pct(c.get('true', 0), rev):>10}")
    print(f"{'all':<8} {summary['true']:>5} {summary['safe']:>5} {summary['false']:>6} "
          f"{sum(c.get('unreviewed', 0) for c in summary['rules'].values()):>6} "
          f"{pct(summary['true'], summary['reviewed']):>10}")
    print("(real code only; precision = true / reviewed findings of this run)")
    loc = summary["local"]
    if loc:
        rev = loc.get("true", 0) + loc.get("safe", 0) + loc.get("false", 0)
        print(f"local sources (scenarios, external cases): {loc.get('true', 0)} true, {loc.get('safe', 0)} safe, "
              f"{loc.get('false', 0)} false, {loc.get('unreviewed', 0)} unreviewed ({pct(loc.get('true', 0), rev)} true)")
    if summary["unreviewed"]:
        print(f"\n{len(summary['unreviewed'])} findings are not reviewed yet (--sample N to review some), e.g.:")
        for u in summary["unreviewed"][:10]:
            print(f"  {u['package']} {u['file']}:{u['line']} {u['rule']}")
    if summary["fixed_false_alarms"]:
        print(f"\n{len(summary['fixed_false_alarms'])} reviewed safe/false findings are gone; run --update to record it")
    if summary["known_misses"]:
        print(f"\n{len(summary['known_misses'])} reviewed true risks are known misses (not reported; seen=no):")
        for m in summary["known_misses"]:
            print(f"  {m['package']} {m['file']}:{m['line']} {m['rule']}")
    for m in summary["found_again"]:
        print(f"found again (a known miss is reported now; set seen=yes): {m['package']} {m['file']}:{m['line']} "
              f"{m['rule']}")
    if summary["stale_reviews"]:
        print(f"\n{summary['stale_reviews']} reviews are for another version of their package (ignored)")
    for f in summary["failures"]:
        print(f"FAIL: {f}")


def print_sample(runs: list[Run], reviews: list[dict], n: int, seed: int, include_reviewed: bool) -> None:
    by_key = {(r["package"], r["file"], r["line"], r["rule"]): r for r in reviews}
    pool = sorted(((run, f) for run in runs for f in run.findings
                   if include_reviewed or review_of(by_key, run.source.package, f) is None),
                  key=lambda rf: (rf[0].source.package, rf[1]["file"], rf[1]["line"], rf[1]["rule"]))
    picked = random.Random(seed).sample(pool, min(n, len(pool)))
    tally: dict[str, int] = {}
    for i, (run, f) in enumerate(picked, 1):
        print(f"=== [{i}] {run.source.package} {run.source.version} {f['file']}:{f['line']} {f['rule']}")
        print(f"    {f['message']}")
        review = review_of(by_key, run.source.package, f)
        verdict = review["verdict"] if review else "unreviewed"
        tally[verdict] = tally.get(verdict, 0) + 1
        if review:
            print(f"    reviewed: {verdict}: {review['reason']}")
        print(context(run.source.root, f["file"], f["line"]))
        print()
    judged = sum(v for k, v in tally.items() if k != "unreviewed")
    share = f"{100 * tally.get('true', 0) / judged:.1f}% true" if judged else "none reviewed"
    counts = ", ".join(f"{tally.get(k, 0)} {k}" for k in ("true", "safe", "false", "unreviewed"))
    print(f"sample of {len(picked)} (seed {seed}): {counts}; {share} of the reviewed")


def update(runs: list[Run], reviews: list[dict]) -> list[dict]:
    present = {(run.source.package, f["file"], f["line"]) for run in runs for f in run.findings}
    linted = {run.source.package for run in runs}
    for r in reviews:
        if r["package"] in linted and r["verdict"] != "true":
            r["seen"] = "yes" if (r["package"], r["file"], r["line"]) in present else "no"
    return reviews


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", type=Path, default=Path(os.environ.get("DESYNC_BIN", REPO / "target/release/desync")))
    parser.add_argument("--reviewed", type=Path, default=REVIEWED)
    parser.add_argument("--only", help="comma-separated package names to run")
    parser.add_argument("--no-local", action="store_true",
                        help="leave out the local sources (desync-scenarios, external-cases), e.g. to sample real code")
    parser.add_argument("--sample", type=int, metavar="N", help="print N seeded random findings with context")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--all", action="store_true", help="with --sample, draw from reviewed findings too")
    parser.add_argument("--update", action="store_true", help="record `seen` from this run in the reviewed list")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--include-indirect", action="store_true",
                        help="lint with --include-indirect (findings with indirect evidence too)")
    args = parser.parse_args()
    if args.include_indirect:
        LINT_FLAGS.append("--include-indirect")

    if not args.bin.exists():
        print(f"no desync binary at {args.bin}: cargo build --release -p desync (or --bin)", file=sys.stderr)
        return 2
    only = set(args.only.split(",")) if args.only else None
    runs = [lint(args.bin, s) for s in sources(only, local=not args.no_local)]
    reviews = load_reviews(args.reviewed)
    if args.sample:
        print_sample(runs, reviews, args.sample, args.seed, args.all)
        return 0
    if args.update:
        save_reviews(args.reviewed, update(runs, reviews))
        reviews = load_reviews(args.reviewed)
    summary, failures = report(runs, reviews)
    print_report(summary)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
