set terminal pngcairo size 1000,820 font 'sans,10'
set output 'docs/simulate-capacity.png'
set multiplot layout 2,1 title 'clairfs simulate --nodes 64: ImageNet-1k sizes, 64 nodes x 8 ranks, 4 epochs (a model, docs/SIMULATOR.md)'
set xlabel 'caches of all nodes together (% of the dataset)'
set key outside right
set grid
set ylabel 'PFS bytes over the job (x dataset)'
plot 'docs/simulate-capacity.dat' using 1:2 with linespoints lc rgb '#d95f02' title columnheader(2), \
     'docs/simulate-capacity.dat' using 1:3 with linespoints lc rgb '#7570b3' title columnheader(3), \
     'docs/simulate-capacity.dat' using 1:4 with linespoints lc rgb '#1b9e77' title columnheader(4)
set ylabel 'readers stall over the job (s)'
plot 'docs/simulate-capacity.dat' using 1:5 with linespoints lc rgb '#d95f02' title columnheader(5), \
     'docs/simulate-capacity.dat' using 1:6 with linespoints lc rgb '#7570b3' title columnheader(6), \
     'docs/simulate-capacity.dat' using 1:7 with linespoints lc rgb '#1b9e77' title columnheader(7)
unset multiplot
