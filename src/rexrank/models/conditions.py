"""CheXbert's 14 conditions and head classes (stanfordmlgroup/CheXbert `src/constants.py`), torch-free."""

CONDITIONS = ("Enlarged Cardiomediastinum", "Cardiomegaly", "Lung Opacity", "Lung Lesion", "Edema",
              "Consolidation", "Pneumonia", "Atelectasis", "Pneumothorax", "Pleural Effusion", "Pleural Other",
              "Fracture", "Support Devices", "No Finding")
BLANK, POSITIVE, NEGATIVE, UNCERTAIN = 0, 1, 2, 3  # the No Finding head has only BLANK and POSITIVE
