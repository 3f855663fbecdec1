"""Turning items into model outputs, fast and bounded: the image DataLoader and its workers, the decoders (PIL,
or nvJPEG on the GPU), captions in length-sorted batches tokenised ahead, host work overlapped with the model,
and one decode shared by several models."""
