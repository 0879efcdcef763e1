set terminal pngcairo size 900,520 font 'sans,10'
set output 'docs/bench-epoch.png'
set title 'clairfs bench epoch: 1000 files, 4 readers, PFS emulator 2 ms/open, 200 MB/s'
set xlabel 'epoch'
set ylabel 'epoch time (s)'
set logscale y
set key outside right
set xtics 1
set grid
plot for [i=2:7] 'docs/bench-epoch.dat' using 1:i with linespoints title columnheader(i)
