//! chainsig-ctru-cuda: CTRU-Prime polynomial products and the KEM in batch on an NVIDIA GPU.
