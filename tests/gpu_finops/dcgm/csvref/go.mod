module gpu-finops/csvref

go 1.22
